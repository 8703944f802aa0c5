"""A quiet progress line for long runs: nothing for the first couple of seconds, then an
elapsed-time ticker on stderr (rewritten in place on a terminal, a line every 5 s otherwise),
with what the step reports of itself (``status()``: a MILP's incumbent, bound and gap)."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_STDERR: list = []


def _stderr():
    """Standard error as it was when coopt started: Pyomo points file descriptor 2 elsewhere while
    HiGHS runs (to capture its log), and the progress line must still reach the user."""
    if not _STDERR:
        try:
            _STDERR.append(os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1, encoding="utf-8"))
        except (AttributeError, OSError, ValueError):  # no real descriptor (a test's capture)
            return sys.stderr
    return _STDERR[0]


@contextmanager
def ticker(
    label: str, *, after: float = 2.0, stream=None, status: Callable[[], str] | None = None
) -> Iterator[None]:
    stream = stream or _stderr()
    tty = hasattr(stream, "isatty") and stream.isatty()
    done = threading.Event()
    start = time.perf_counter()
    width = [0]  # the longest line written, so a shorter one overwrites all of it

    def run() -> None:
        if done.wait(after):
            return
        period = 0.5 if tty else 5.0
        while True:
            elapsed = time.perf_counter() - start
            said = status() if status is not None else ""
            said = f"  {said}" if said else ""
            if tty:
                line = f"  {label} ... {elapsed:6.1f} s{said}"
                stream.write("\r" + line.ljust(width[0]))
                width[0] = max(width[0], len(line))
            else:
                stream.write(f"  {label} ... {elapsed:.0f} s{said}\n")
            stream.flush()
            if done.wait(period):
                break
        if tty:
            stream.write("\r" + " " * max(width[0], len(label) + 20) + "\r")
            stream.flush()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
