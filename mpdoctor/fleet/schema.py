"""``python -m mpdoctor.fleet.schema`` regenerates the shipped fleet JSON Schema from ``mpdoctor.fleet.model``.

It sits beside the other contracts' schemas (``mpdoctor/schema/``); tests/test_fleet_schema.py
fails when the shipped file is out of date, as tests/test_schema.py does for the others.
"""

import json
import sys

from mpdoctor.fleet.model import SCHEMA_PATH, fleet_schema


def schema_text() -> str:
    return json.dumps(fleet_schema(), indent=2) + "\n"


if __name__ == "__main__":
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
    sys.stdout.write(f"wrote {SCHEMA_PATH}\n")
