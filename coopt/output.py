"""What coopt writes, and where: strict JSON (no Infinity, no NaN) for every report, result line and
bound, and output paths that are checked before any work starts.

An output path (``--json OUT``, ``-o OUT``, ``--plot OUT``) is one of:

* ``-``: standard output (where the command writes text);
* a regular file, or a path that does not exist yet whose folder does (folders are not created);
* a symbolic link to one of those: the link is followed and its target written, the link kept.

Anything else (a folder, a FIFO, a device, a path below a regular file, a folder that cannot be
written) is refused with one line before the command does any work. Files are replaced atomically
(written beside the target, then renamed over it) with the mode ``0666`` minus the umask, as any
other program would create them.
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

from coopt.errors import UsageError

STDOUT = "-"


def non_finite(value: Any, where: str = "solution") -> list[str]:
    """Where a JSON-like value holds inf or NaN (a checker's first question: decisions and
    objectives are finite numbers, and strict JSON has no word for the others)."""
    if isinstance(value, float):
        return [] if math.isfinite(value) else [f"{where} = {value!r}"]
    if isinstance(value, dict):
        return [bad for k, v in value.items() for bad in non_finite(v, f"{where}.{k}")]
    if isinstance(value, list | tuple):
        return [bad for i, v in enumerate(value) for bad in non_finite(v, f"{where}[{i}]")]
    return []


def dumps(data: Any, **kwargs: Any) -> str:
    """Strict JSON text (no Infinity, no NaN), the one writer of every report and result line."""
    try:
        return json.dumps(data, allow_nan=False, **kwargs)
    except ValueError as exc:
        found = non_finite(data, "report")
        raise ValueError(f"refusing to write non-finite numbers as JSON: {', '.join(found[:3])}") from exc


def output_path(path: str | os.PathLike, what: str, suffixes: tuple[str, ...] = ()) -> Path | None:
    """Check an output path before any work: the real file to write (a link is followed), or None
    for standard output. Raises :class:`UsageError` naming the option and the reason."""
    text = os.fspath(path)
    if text == STDOUT:
        return None
    target = Path(os.path.realpath(text)) if os.path.islink(text) else Path(text)
    if suffixes and target.suffix.lower() not in suffixes:
        raise UsageError(f"{what} {text}: expected a file ending in {' or '.join(suffixes)}")
    try:
        st = target.stat()
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise UsageError(f"{what} {text}: a part of the path is a file, not a folder") from None
    except OSError as exc:
        raise UsageError(f"{what} {text}: cannot be used ({exc.strerror})") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise UsageError(f"{what} {text}: is a folder, expected a file name")
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{what} {text}: is not a regular file (a FIFO, device or socket); "
                             "give a file name, or - for standard output")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        reason = "does not exist" if not folder.exists() else "is not a folder"
        raise UsageError(f"{what} {text}: its folder {folder} {reason}")
    if not os.access(folder, os.W_OK | os.X_OK) or str(folder.resolve()).startswith(("/proc", "/sys")):
        raise UsageError(f"{what} {text}: its folder {folder} cannot be written")
    return target


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | os.PathLike | None, text: str) -> None:
    """Write ``text`` so that the file is either untouched or complete, never half-written; None or
    ``-`` writes to standard output. A symbolic link is followed (its target is replaced)."""
    if path is None or os.fspath(path) == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target = Path(os.path.realpath(path))
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
