"""Files the node programs write whole: a reader sees the old content or the new, never half of either."""

from __future__ import annotations

import contextlib
import os
import tempfile


def replace(path: str, content: str, mode: int, *, prefix: str = ".clusterfab-") -> None:
    """Write `content` to `path` with `mode` through a temporary file beside it, renamed over `path`."""
    directory = os.path.dirname(path) or "."
    descriptor, temporary = tempfile.mkstemp(prefix=prefix, dir=directory)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(content)
        os.chmod(temporary, mode)  # mkstemp's 0600 otherwise: the exporter and slurmdbd read as others
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
