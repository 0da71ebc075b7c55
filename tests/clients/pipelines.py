"""The pipeline the real-client tests deploy: a build, then a step behind an approval."""

from __future__ import annotations

import uuid
from pathlib import Path

GATED = """
[[steps]]
name = "build"
run = "true"
[[steps]]
name = "ship"
run = "true"
approval = "Ship it?"
"""


def gated_pipeline(pipelines_dir: Path) -> str:
    """Writes the gated pipeline under a fresh name in `pipelines_dir`; its name."""
    name = f"p-{uuid.uuid4().hex[:12]}"
    (pipelines_dir / f"{name}.toml").write_text(GATED)
    return name
