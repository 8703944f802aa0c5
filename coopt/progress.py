"""A quiet progress line for long runs: nothing for the first couple of seconds, then an
elapsed-time ticker on stderr (rewritten in place on a terminal, a line every 30 s otherwise)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def ticker(label: str, *, after: float = 2.0, stream=None) -> Iterator[None]:
    stream = stream or sys.stderr
    tty = hasattr(stream, "isatty") and stream.isatty()
    done = threading.Event()
    start = time.perf_counter()

    def run() -> None:
        if done.wait(after):
            return
        period = 0.5 if tty else 30.0
        while True:
            elapsed = time.perf_counter() - start
            if tty:
                stream.write(f"\r  {label} ... {elapsed:6.1f} s")
            else:
                stream.write(f"  {label} ... {elapsed:.0f} s\n")
            stream.flush()
            if done.wait(period):
                break
        if tty:
            stream.write("\r" + " " * (len(label) + 20) + "\r")
            stream.flush()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
