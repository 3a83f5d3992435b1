"""Files replaced whole or not at all: a reader (the engine re-reading the voices file) never sees half of one, and
once written they stay written (the file and then its folder are flushed to disk: a power cut after a change was
answered does not undo it). A kill halfway leaves a temporary file (.NAME.*.tmp), swept at the next start."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def atomic_write(path: Path, data: bytes) -> None:
    """Writes `data` to a temporary file beside `path`, flushes it to disk, then renames it over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
