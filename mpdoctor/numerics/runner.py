"""Run an unchanged training script under a numerics watch of every module it builds (``mpdoctor numerics``).

    python -m mpdoctor.numerics.runner --result FILE [--steps N] [--module] TARGET [ARGS...]

The child side of the CLI: it runs in the script's interpreter (which has torch; mpdoctor's CLI process
never imports it). The script runs as ``python TARGET ARGS`` (or ``python -m TARGET ARGS``) would: its
own ``sys.argv``, ``__name__ == "__main__"``, its directory first on ``sys.path``. The watch covers every
module called (global forward hooks) and every op; the first event is printed on stderr the moment it is
known, and the whole verdict, with how the script ended, is written to FILE as JSON for the CLI to render.
"""

from __future__ import annotations

import json
import os
import sys
import traceback


def _live(event) -> None:
    if _live.shown:
        return
    _live.shown = True
    sys.stderr.write(f"mpdoctor numerics: {event.line()}\n  fix: {event.fix}\n")
    sys.stderr.flush()


_live.shown = False


def main(argv: list[str]) -> int:
    result_path, steps, as_module = None, None, False
    while argv and argv[0].startswith("--"):
        option = argv.pop(0)
        if option == "--result":
            result_path = argv.pop(0)
        elif option == "--steps":
            steps = int(argv.pop(0))
        elif option == "--module":
            as_module = True
        elif option == "--":
            break
        else:
            raise SystemExit(f"mpdoctor.numerics.runner: unknown option {option}")
    if result_path is None or not argv:
        raise SystemExit(
            "usage: python -m mpdoctor.numerics.runner --result FILE [--steps N] [--module] TARGET [ARGS...]"
        )
    target, args = argv[0], argv[1:]
    script = {"target": target, "status": "ok", "exit_code": 0, "error": None}
    try:
        from mpdoctor.numerics.watch import NumericsWatch

        watch = NumericsWatch(None, steps=steps, on_event=_live)
        watch.unverified = "not verified (the script's step cannot be re-run)"  # the script owns its steps
    except ImportError as exc:  # no torch in this interpreter
        script.update(status="no-torch", exit_code=2, error=f"{type(exc).__name__}: {exc}")
        _write(result_path, script, None)
        return 2
    import runpy

    sys.argv = [target, *args]
    if not as_module:
        sys.path[0] = os.path.dirname(os.path.abspath(target))
    else:
        sys.path[0] = os.getcwd()
    try:
        with watch:
            if as_module:
                runpy.run_module(target, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None or code == 0:
            pass
        elif isinstance(code, int):
            script.update(status="exit", exit_code=code)
        else:
            sys.stderr.write(f"{code}\n")
            script.update(status="exit", exit_code=1, error=str(code))
    except KeyboardInterrupt:
        script.update(status="interrupted", exit_code=130, error="KeyboardInterrupt")
    except BaseException as exc:  # the script's own failure: shown as Python would, then reported as such
        traceback.print_exc()
        script.update(status="raised", exit_code=1, error=f"{type(exc).__name__}: {exc}"[:2000])
    _write(result_path, script, watch)
    return 0


def _write(path: str, script: dict, watch) -> None:
    data = {"script": script, "watch": None if watch is None else watch.to_data()}
    if watch is not None:
        data["verdict"] = watch.verdict()
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, allow_nan=False, default=str, indent=None)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
