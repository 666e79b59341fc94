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


if __name__ == "__main__":
    SCHEMA_DIR.mkdir(exist_ok=True)
    for path, make in schemas().items():
        path.write_text(json.dumps(make(), indent=2) + "\n", encoding="utf-8")
        sys.stdout.write(f"wrote {path}\n")
