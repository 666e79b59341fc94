"""``python -m mpdoctor.schema`` regenerates every shipped JSON Schema from the dataclasses."""

import json
import sys
from pathlib import Path
from typing import Callable

from mpdoctor.schema.contract import SCHEMA_DIR


def schemas() -> dict[Path, Callable[[], dict]]:
    """Every shipped schema and the function that generates it."""
    from mpdoctor.checkpoint_audit import report as audit
    from mpdoctor.doctor.report import SCHEMA_PATH, report_schema
    from mpdoctor.explain import report as explain
    from mpdoctor.fleet import model as fleet

    return {
        SCHEMA_PATH: report_schema,
        explain.SCHEMA_PATH: explain.explain_schema,
        audit.SCHEMA_PATH: audit.audit_schema,
        fleet.SCHEMA_PATH: fleet.fleet_schema,
    }


USAGE = """usage: python -m mpdoctor.schema [--check]

Regenerate every JSON Schema mpdoctor ships (in mpdoctor/schema/) from its dataclasses.
  --check   write nothing: exit 1 and name the schemas that are out of date
"""


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0
    if argv and argv != ["--check"]:
        sys.stderr.write(USAGE)
        return 2
    stale = []
    for path, make in schemas().items():
        text = json.dumps(make(), indent=2) + "\n"
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if not argv:
            SCHEMA_DIR.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
            sys.stdout.write(f"wrote {path}\n")
    if argv:  # --check
        for path in stale:
            sys.stdout.write(f"out of date: {path}\n")
        return 1 if stale else 0
    if not stale:
        sys.stdout.write("every schema is up to date\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
