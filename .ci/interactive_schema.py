"""Print or write mcp_tasks/contracts/interactive.schema.json, the JSON Schema of the interactive
contract, from its typed payloads (mcp_tasks/contracts/interactive.py).

    .venv/bin/python .ci/interactive_schema.py           # print it
    .venv/bin/python .ci/interactive_schema.py --write   # write it

tests/workflows/test_interactive_contract.py fails while the file is stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mcp_tasks import contracts
from mcp_tasks.contracts.interactive import SCHEMA_FILE_NAME, rendered_schema

SCHEMA_FILE = Path(contracts.__file__).parent / SCHEMA_FILE_NAME


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--write", action="store_true", help=f"write {SCHEMA_FILE}")
    args = parser.parse_args(argv)
    if args.write:
        SCHEMA_FILE.write_text(rendered_schema())
    else:
        sys.stdout.write(rendered_schema())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
