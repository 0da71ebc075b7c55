"""The bottom layer: what every other layer needs, importing nothing of theirs.

- `settings`: `Settings`, read from `MCP_TASKS_*` and the flags;
- `logging`: the process log format;
- `webhooks/`: the operator's webhook endpoint file and the signature of a delivery;
- `contracts/`: what workflows, activities and the server agree on (approver ids, the input
  types and names of the quota and webhook activities); pure and deterministic, passed
  through the workflow sandbox like `workflows/`.

See docs/contributing/layout.md for the layer order, which `make lint` enforces.
"""

__version__ = "0.1.0"
