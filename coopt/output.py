"""What coopt writes, and where: strict JSON (no Infinity, no NaN) for every report, result line and
bound, and output paths that are checked before any work starts.

An output path (``--json OUT``, ``-o OUT``, ``--plot OUT``) is one of:

* ``-``: standard output (where the command writes text);
* a regular file, or a path that does not exist yet whose folder does (folders are not created);
* a symbolic link to one of those: the link is followed and its target written, the link kept.

Anything else (a folder, a FIFO, a device, a path below a regular file, a folder that cannot be
written) is refused with one line before the command does any work. An output folder (``bench
--out DIR``) is checked the same way by :func:`output_dir`. Files are replaced atomically
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
    if text.endswith(("/", os.sep)):
        raise UsageError(f"{what} {text}: ends in '/', expected a file name")
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


def output_dir(path: str | os.PathLike, what: str) -> Path:
    """Check an output folder before any work: a folder that can be written, or a path that does not
    exist yet below one (it is created when the first file is written). Raises :class:`UsageError`
    naming the option and the reason (a file, a device, a path below a file, a read-only folder)."""
    text = os.fspath(path)
    if text in ("", STDOUT):
        raise UsageError(f"{what} {text!r}: expected a folder name")
    target = Path(text)
    probe = target
    while True:
        try:
            st = probe.stat()
            break
        except FileNotFoundError:
            if probe.parent == probe:
                raise UsageError(f"{what} {text}: no part of the path exists") from None
            probe = probe.parent if str(probe.parent) else Path(".")
        except NotADirectoryError:
            raise UsageError(f"{what} {text}: a part of the path is a file, not a folder") from None
        except OSError as exc:
            raise UsageError(f"{what} {text}: cannot be used ({exc.strerror})") from None
    if not stat.S_ISDIR(st.st_mode):
        kind = "a file" if stat.S_ISREG(st.st_mode) else "a FIFO, device or socket"
        where = "is" if probe == target else f"is below {probe}, which is"
        raise UsageError(f"{what} {text}: {where} {kind}, expected a folder")
    if not os.access(probe, os.W_OK | os.X_OK) or str(probe.resolve()).startswith(("/proc", "/sys", "/dev")):
        raise UsageError(f"{what} {text}: {'the folder' if probe == target else f'its folder {probe}'} "
                         "cannot be written")
    return target


def beside_if_interrupted(target: Path | None, interrupted: bool) -> Path | None:
    """Where a run writes its output: ``target``, except that an interrupted run never replaces an
    existing file (it may hold more than the run finished); it writes ``NAME.interrupted.SUFFIX``
    beside it instead."""
    if not interrupted or target is None or not target.exists():
        return target
    return target.with_name(f"{target.stem}.interrupted{target.suffix}")


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
