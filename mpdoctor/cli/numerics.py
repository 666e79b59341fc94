"""`mpdoctor numerics`: run an unchanged training script and name the first module that overflows, turns NaN or
underflows in fp16/bf16, forward or backward, with the fix."""

# No `from __future__ import annotations`: on Python 3.9 typer reads the options declared with Annotated
# only from annotations evaluated when the command is defined (it evaluates strings from 3.10 on).

import enum
import json
import os
import sys
import tempfile
from typing import Annotated, Optional

import typer

from mpdoctor.cli.app import app
from mpdoctor.cli.help import HELP, HelpCommand
from mpdoctor.cli.options import resolve_python, usage_error


class NumericsFormat(str, enum.Enum):
    text = "text"
    json = "json"


@app.command(
    cls=HelpCommand,
    context_settings={**HELP, "allow_interspersed_args": False, "ignore_unknown_options": True},
)
def numerics(
    target: Annotated[
        Optional[str], typer.Argument(metavar="SCRIPT", help="The training script, run as `python SCRIPT ARGS` would.")
    ] = None,
    args: Annotated[
        Optional[list[str]], typer.Argument(metavar="[ARGS]...", help="The script's own arguments, unchanged.")
    ] = None,
    module: Annotated[
        Optional[str],
        typer.Option(
            "-m",
            "--module",
            metavar="MODULE",
            help="Run a module, as `python -m MODULE`; mpdoctor's options go before it, its arguments after "
            "(after `--` when one is named like an mpdoctor option).",
        ),
    ] = None,
    steps: Annotated[
        Optional[int], typer.Option("--steps", metavar="N", min=1, help="Stop watching after N optimizer steps.")
    ] = None,
    format: Annotated[NumericsFormat, typer.Option("--format", "-f", help="Output format.")] = NumericsFormat.text,
    python: Annotated[
        Optional[str], typer.Option(metavar="PYTHON", help="Run the script with this interpreter (it needs torch).")
    ] = None,
) -> None:
    """Run a training script unchanged and name the first module whose fp16/bf16 values overflow, turn NaN or
    underflow, forward or backward, with the fix.

    Every module the script builds is watched, and every op inside them; the first event is printed on
    stderr the moment it is known, the verdict at the end. GradScaler's own skipped steps are reported
    as the scaler's, not as the model's.

    Exit status: 0 clean; 1 an event was found; the script's own status when it failed without one
    (the report says how it failed); 2 for usage errors.
    """
    if module is not None:
        if target is not None:  # `-m pkg.mod ARGS`: what came first is the module's first argument
            args = [target, *(args or [])]
        target, as_module = module, True
    else:
        as_module = False
        if target is None:
            usage_error("give the training script (or -m MODULE) to run")
        if not os.path.isfile(target):
            usage_error(f"no such script: {target}")
    interpreter = resolve_python(python)
    report, problem = _run(interpreter, target, args or [], as_module, steps, json_output=format is NumericsFormat.json)
    if report is None:
        usage_error(problem)
    from mpdoctor.render.output import to_stdout

    if format is NumericsFormat.json:
        to_stdout(lambda: sys.stdout.write(json.dumps(report, indent=2) + "\n"))
    else:
        to_stdout(lambda: sys.stdout.write(_text(report)))
    raise typer.Exit(_status(report))


def _run(interpreter: str, target: str, args: list, as_module: bool, steps: Optional[int], json_output: bool):
    """Run the child (``mpdoctor.numerics.runner``) and read its result: (report, None) or (None, problem)."""
    home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (home, env.get("PYTHONPATH")) if p)  # mpdoctor, in any interpreter
    handle, result = tempfile.mkstemp(prefix="mpdoctor-numerics-", suffix=".json")
    os.close(handle)
    command = [interpreter, "-m", "mpdoctor.numerics.runner", "--result", result]
    if steps is not None:
        command += ["--steps", str(steps)]
    if as_module:
        command.append("--module")
    command += ["--", target, *args]
    try:
        # The script's own prints go where they would; under --format json to stderr, so stdout stays JSON.
        from mpdoctor.probes.child import run_attached

        returncode = run_attached(command, env=env, stdout=sys.stderr if json_output else None)
        try:
            with open(result, encoding="utf-8") as stream:
                text = stream.read()
        except OSError:
            text = ""
    except OSError as exc:
        return None, f"cannot run {interpreter}: {exc.strerror or exc}"
    finally:
        try:
            os.unlink(result)
        except OSError:
            pass
    if not text:
        return {
            "script": {
                "target": target,
                "status": "died",
                "exit_code": returncode,
                "error": f"the script ended without letting mpdoctor report (exit status {returncode}: "
                "os._exit, a signal, or out of memory)",
            },
            "watch": None,
        }, None
    report = json.loads(text)
    if report["script"]["status"] == "no-torch":
        return None, f"{interpreter} cannot import torch ({report['script']['error']}): give one that can, --python"
    return report, None


def _status(report: dict) -> int:
    watch = report.get("watch")
    if watch and watch.get("events"):
        return 1
    code = report["script"].get("exit_code") or 0
    return code if report["script"]["status"] != "ok" else 0


def _text(report: dict) -> str:
    script = report["script"]
    lines = [report.get("verdict") or "numerics: nothing was watched (the script ended before reporting)"]
    status = script["status"]
    if status == "ok":
        lines.append(f"script: {script['target']} finished")
    elif status == "exit":
        lines.append(f"script: {script['target']} exited with status {script['exit_code']}")
    else:
        lines.append(f"script: {script['target']} failed: {script.get('error')}")
    return "\n".join(lines) + "\n"
