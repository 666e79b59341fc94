"""A plain ``mpdoctor check`` starts probing before the CLI loads.

Importing torch in the probe children is most of a check's time, and nothing the
CLI loads first (typer, rich, the checks registry: about 0.07 s) is needed to start
them. :func:`start_check_early`, called by both entry points (``python -m mpdoctor``
before it imports the CLI, the console script's ``cli.main``), reads the command line
with no help from typer and,
when it is a plain ``mpdoctor check`` whose options all parse cleanly, starts the
snapshot it asks for (``probes.early``); ``doctor.gather`` claims it once typer has
parsed the same options, or gives it up.

Anything unusual starts nothing early and is left to typer: another command,
``--help``, ``--snapshot``, ``--select``/``--ignore`` (which facts are needed depends
on the checks), an unknown option or a value typer would refuse, an output path that
cannot be written, no temporary directory. So ``--help`` and a bad option are
answered exactly as before, and no probe child is started for them.

Why typer parses the same command line again: the pre-scan runs before typer is
imported (that is the point) and reads only what a plain check may hold; typer
still parses every command line, validates it, answers ``--help`` and usage
errors, and serves every command the pre-scan leaves alone (and ``CliRunner``
tests, which never run the pre-scan). So both parses exist, and they share the
options' declarations rather than repeating them: ``--timeout`` and ``--python``
are read by the very functions the CLI's options call (``budget.parse_timeout``,
which also builds the run's Budget, and ``target_python.find_python``), and the
choices are held to the CLI's enums by ``tests/test_prescan.py``. ``gather``
still compares the two requests: a divergence costs the early start, never a
snapshot of other options.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

if TYPE_CHECKING:
    from mpdoctor.probes import early
    from mpdoctor.probes.budget import Budget

PathProblem = Callable[[str], str]  # why a path cannot take a report, "" when it can (render.output.target_problem)

# The values typer accepts (cli/options.py's enums; tests/test_prescan.py holds these to them). A value the
# CLI accepts that is missing here only means no early start.
FORMATS = {"text", "json", "markdown", "github", "junit"}
FAIL_ON = {"error", "warning", "info", "never"}
KERNEL_MODES = {"quick", "full"}
TAKES_VALUE = {
    "--format": FORMATS,
    "--fail-on": FAIL_ON,
    "--kernels": KERNEL_MODES,
    "--output": None,
    "--save-snapshot": None,
    "--python": None,
    "--timeout": None,
    "--project": None,
}  # None: any value, checked below
SHORT = {"-f": "--format", "-o": "--output", "-q": "--quiet"}
FLAGS = {"--no-kernels", "--quiet"}


def check_request(argv: list[str], path_problem: PathProblem) -> Optional[early.Request]:
    """The snapshot ``mpdoctor <argv>`` will take, or None when it is not a plain check.

    ``path_problem``: the CLI's own test of an ``--output`` path (the entry point
    passes ``render.output.target_problem``, a layer this one does not import).
    """
    if not argv or argv[0] != "check":
        return None
    values: dict[str, str] = {}
    flags: set[str] = set()
    rest = argv[1:]
    while rest:
        word, rest = rest[0], rest[1:]
        name, equals, value = word.partition("=") if word.startswith("--") else (SHORT.get(word, word), "", "")
        if name in FLAGS and not equals:
            flags.add(name)
        elif name in TAKES_VALUE:
            if not equals:
                if not rest:
                    return None
                value, rest = rest[0], rest[1:]
            choices = TAKES_VALUE[name]
            if choices is not None and value not in choices:
                return None
            values[name] = value  # given twice, the last one counts, as with typer
        else:  # --help, --select, --snapshot, a typo, an argument: typer's business
            return None
    budget = _budget(values.get("--timeout"))
    python = _python(values.get("--python"))
    if budget is None or python is None:
        return None
    for option in ("--output", "--save-snapshot"):
        if option in values and path_problem(values[option]):
            return None
    from mpdoctor.probes import early
    from mpdoctor.probes.tempdir import temp_problem

    if temp_problem():
        return None
    project_dir = _project(values.get("--project"))
    if project_dir is None:
        return None
    kernels = "off" if "--no-kernels" in flags else values.get("--kernels", "quick")
    # every check is selected: every fact is needed
    return early.Request(python, budget, kernels, project=True, project_dir=project_dir)


def _budget(text: Optional[str]) -> Optional[Budget]:
    """The run's Budget as the CLI's --timeout will read it (the same function); None where that is a usage error."""
    from mpdoctor.probes.budget import DEFAULT_TIMEOUT, parse_timeout

    try:
        return parse_timeout(DEFAULT_TIMEOUT if text is None else text)
    except ValueError:
        return None


def _python(given: Optional[str]) -> Optional[str]:
    """The interpreter as the CLI will resolve it (the same function); None where that is a usage error."""
    from mpdoctor.probes.target_python import find_python

    found, problem = find_python(given)
    return None if problem else found


def _project(given: Optional[str]) -> Optional[str]:
    """--project's directory as the CLI will read it (the same check), absolute; "" when not given; None where
    that is a usage error."""
    import os

    from mpdoctor.probes.remote.project_root import problem

    if given is None:
        return ""
    return None if problem(given) else os.path.abspath(given)


_looked = False  # once a process: `python -m mpdoctor` looks before the CLI loads, and main() again after


def start_check_early(argv: list[str], path_problem: PathProblem) -> None:
    """Start ``mpdoctor check``'s snapshot now when ``argv`` (without the program) is a plain check.

    Ctrl-C or SIGTERM from then on kill its children (``child.on_signal``), even
    before the CLI's ``main`` installs its own handler (which does the same).
    """
    global _looked
    if _looked:
        return
    _looked = True
    try:
        request = check_request(argv, path_problem)
    except Exception:  # never let the shortcut be the reason a command fails: typer will say what is wrong
        return
    if request is None:
        return
    import signal

    from mpdoctor.probes import child, early

    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, child.on_signal)
    except ValueError:  # not the main thread (an embedding): its signals are not ours to take
        pass
    early.start(request)
