"""The data dir of `mcp-tasks dev` and `stdio --dev` is private to its user.

- Created 0700 when it does not exist (its parents are the user's business; an existing dir
  keeps the mode its owner gave it).
- Every file this project creates in it is 0600 from its first instant (`open_private`); the
  Temporal dev server runs with umask 077 (devserver.py), so `temporal.db` and its WAL are too.
- The state secret (it signs request state and sessions) is created with O_EXCL and mode 0600:
  two processes starting at once share one key, and no other user can read it, not even
  while it is written.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
STATE_SECRET_FILE = "state-secret"


def private_data_dir(data_dir: Path) -> None:
    """Create the data dir 0700 when it does not exist (its parents are the user's business)."""
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        data_dir.mkdir(mode=PRIVATE_DIR_MODE)
        data_dir.chmod(PRIVATE_DIR_MODE)  # whatever the umask


def open_private(path: Path, flags: int) -> int:
    """`os.open` of a file created 0600 from its first instant (an existing file keeps its
    mode)."""
    return os.open(path, flags | os.O_CREAT, PRIVATE_FILE_MODE)


def state_secret_of(data_dir: Path) -> str:
    """The data dir's state secret (signs request state and sessions), made on first use:
    created exclusively with mode 0600, so two processes starting at once share one key and no
    other user can read it, not even while it is written."""
    private_data_dir(data_dir)
    path = data_dir / STATE_SECRET_FILE
    try:
        fd = open_private(path, os.O_WRONLY | os.O_EXCL)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as created:
            created.write(secrets.token_hex(32))
    deadline = time.monotonic() + 5
    while not (secret := path.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.01)  # the other process is writing it
    return secret
