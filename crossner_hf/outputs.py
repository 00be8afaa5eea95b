"""Writing command outputs so that a failure leaves nothing that looks complete.

- :func:`check_writable`: before any work, the output's folder can be created and written to
  (a read-only location is a one-line error at once, not after minutes of prediction).
- :func:`atomic_output`: write to a hidden temporary name beside the target and move it into place
  only when the block finishes; on an error the temporary file is removed and the target is left
  as it was.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def check_writable(path: str | Path, flag: str, *, folder: bool = False) -> Path:
    """The output ``path`` (a file, or with ``folder=True`` a folder) after checking it can be written.

    Raises ``PermissionError`` (one line naming ``flag``, the path and the fix) otherwise.
    """
    path = Path(path)
    target = path if folder else path.parent
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target, prefix=".crossner-write-check-"):
            pass
    except OSError as err:
        raise PermissionError(f"{flag} {path}: cannot write to {target} ({err.strerror or err}); "
                              f"choose a writable location for {flag}.") from None
    return path


@contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """``with atomic_output(OUT) as tmp:`` write ``tmp``; it becomes ``OUT`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual mode
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
