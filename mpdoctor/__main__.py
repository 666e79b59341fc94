"""``python -m mpdoctor`` runs the command-line interface.

It also works from a source checkout that was never installed, as long as the
dependencies are there: ``checks/`` (installed as ``mpdoctor.checks``) is found
beside ``mpdoctor/`` (see ``mpdoctor/__init__.py``). When a dependency is missing
it says, in one line, how to install, and exits 2.

Run inside someone else's checkout, it imports nothing of theirs: ``python -m``
puts the working directory first on ``sys.path``, so a ``typer.py`` (or ``rich/``,
``packaging/``) lying there would be imported in place of the real one and run.
That first entry is dropped before anything else is imported, unless mpdoctor
itself lives there (a source checkout run from its own root, as above). The
console script ``mpdoctor`` (which calls :func:`run` too) never had the entry.
"""

import os
import sys


def _drop_working_directory() -> None:
    """Remove the working directory that ``-m`` put at ``sys.path[0]``, unless it is where mpdoctor is."""
    if not sys.path:
        return
    first = sys.path[0]
    try:
        here = os.path.realpath(first or os.curdir)
        cwd = os.path.realpath(os.getcwd())
    except OSError:  # a working directory that was deleted: nothing to import from it either
        return
    if here != cwd:  # `python -P`/PYTHONSAFEPATH, or some other launcher: sys.path[0] is not the working directory
        return
    if here != os.path.dirname(os.path.dirname(os.path.realpath(__file__))):
        del sys.path[0]


_drop_working_directory()

import importlib.util  # noqa: E402 (after the guard above: nothing is imported from the working directory)

REQUIRED = ("typer", "rich", "packaging")  # what the CLI imports; pyproject.toml's dependencies


def _missing() -> list[str]:
    return [name for name in REQUIRED if importlib.util.find_spec(name) is None]


def run() -> None:
    """The program: ``python -m mpdoctor`` and the console script ``mpdoctor`` (pyproject's ``[project.scripts]``).

    A plain ``mpdoctor check`` starts its probes here, before the CLI imports typer,
    rich and the checks (``probes.prescan``): the torch import in the probe child is
    most of a check's time, and nothing the CLI loads is needed to start it.
    """
    missing = _missing()
    if missing:
        source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        sys.stderr.write(
            f"mpdoctor: error: {', '.join(missing)} not installed for {sys.executable}; "
            f"install mpdoctor with its dependencies: {sys.executable} -m pip install {source}\n"
        )
        sys.exit(2)
    from mpdoctor.probes import orphans

    if orphans.adopt():  # before the first child: what its daemons leave is re-parented here, and stopped (Linux)
        import atexit

        atexit.register(_stop_orphans)  # at the very end: after threads still waiting on children (Ctrl-C) are done
    if sys.argv[1:2] == ["check"]:
        from mpdoctor.probes.prescan import start_check_early
        from mpdoctor.render.output import target_problem

        start_check_early(sys.argv[1:], target_problem)
    from mpdoctor.cli import main

    main()


def _stop_orphans() -> None:
    """Stop what the children left running that is still here, and say on stderr what mpdoctor stopped."""
    from mpdoctor.probes import orphans

    child = sys.modules.get("mpdoctor.probes.child")
    if child is not None:  # no child was ever started otherwise
        try:
            child.sweep_orphans()
        except OSError:  # /proc unreadable, say: what the sweeps after each batch of children stopped is named below
            pass
    note = orphans.note(orphans.stopped())
    if note:
        from mpdoctor.render.sanitise import line

        try:
            sys.stderr.write(line(note) + "\n")
        except (OSError, ValueError, AttributeError):  # stderr closed or gone: the processes were stopped all the same
            pass


if __name__ == "__main__":
    run()
