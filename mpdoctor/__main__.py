"""``python -m mpdoctor`` runs the command-line interface.

It also works from a source checkout that was never installed, as long as the
dependencies are there: ``checks/`` (installed as ``mpdoctor.checks``) is found
beside ``mpdoctor/`` (see ``mpdoctor/__init__.py``). When a dependency is missing
it says, in one line, how to install, and exits 2.
"""

import importlib.util
import os
import sys

REQUIRED = ("typer", "rich", "packaging")  # what the CLI imports; pyproject.toml's dependencies


def _missing() -> list[str]:
    return [name for name in REQUIRED if importlib.util.find_spec(name) is None]


if __name__ == "__main__":
    missing = _missing()
    if missing:
        source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        sys.stderr.write(f"mpdoctor: error: {', '.join(missing)} not installed for {sys.executable}; "
                         f"install mpdoctor with its dependencies: {sys.executable} -m pip install {source}\n")
        sys.exit(2)
    from mpdoctor.cli import main

    main()
