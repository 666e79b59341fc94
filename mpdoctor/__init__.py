"""mpdoctor: an environment doctor for mixed-precision (fp16 / bf16 / AMP) PyTorch setups."""

__version__ = "0.1.0"


def _checks_from_a_source_checkout() -> None:
    """Let ``python -m mpdoctor`` run from a checkout that was never installed.

    The design card puts ``checks/`` at the top of the repository, and the
    installer maps it to ``mpdoctor.checks`` (pyproject.toml). Without an install
    nothing does, so this finder, consulted only after every other one has failed,
    maps ``mpdoctor.checks`` to the ``checks/`` beside this package when there is one.
    """
    import os
    import sys

    checks = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "checks")
    init = os.path.join(checks, "__init__.py")
    if not os.path.isfile(init):
        return

    class CheckoutChecks:  # a meta path finder needs only find_spec (importlib.abc would cost 7 ms at start-up)
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name != "mpdoctor.checks":
                return None
            import importlib.util

            return importlib.util.spec_from_file_location(name, init, submodule_search_locations=[checks])

    sys.meta_path.append(CheckoutChecks())


_checks_from_a_source_checkout()


def __getattr__(name: str):
    """The Python API, imported on first use: `import mpdoctor` (and the CLI) never imports torch."""
    if name == "audit":
        from mpdoctor.checkpoint_audit.api import audit

        return audit
    if name == "dtype_trace":
        from mpdoctor.trace import dtype_trace

        return dtype_trace
    if name == "fleet_check":
        from mpdoctor.fleet.api import fleet_check

        return fleet_check
    if name in ("numerics_watch", "numerics_compare"):
        import mpdoctor.numerics

        return getattr(mpdoctor.numerics, name)
    raise AttributeError(f"module 'mpdoctor' has no attribute {name!r}")
