"""Stopping a run: the first Ctrl-C, and the memory and time guards around long steps.

The first Ctrl-C (SIGINT) asks the run to stop. Inside a solver (:func:`in_solver`: HiGHS, or
pipeline's CP-SAT) it only raises :data:`STOP`: HiGHS' interrupt callbacks, or CP-SAT's stop poll,
see it and end the solve with its incumbent, which the report keeps
(status ``interrupted``); anywhere else (a model being built, a heuristic) it raises
``KeyboardInterrupt`` at once. The command then writes what has finished and exits 130.

A second Ctrl-C does not wait for a solver to wind down: a solver that can be abandoned (HiGHS,
see :func:`on_worker`'s ``grace``) is left on its thread at its next poll, with the incumbent its
callbacks recorded; CP-SAT was asked to stop by the first. It never raises into the middle of a
solver's call, nor into the few steps that turn a stopped solve into a report (they all check
:data:`STOP`); a third Ctrl-C outside a solver is a plain ``KeyboardInterrupt``. Once the command's
:func:`stoppable` block has ended after a stop, Ctrl-C is ignored while it writes and exits.

:func:`guard` watches one step from a background thread: past ``seconds`` or above ``memory_bytes``
of resident memory it stops the step the same way, and the step raises :class:`StepLimit`, which
says which limit it hit and the figure.
"""

from __future__ import annotations

import _thread
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from coopt.errors import CooptError

#: Set by the first Ctrl-C (or a guard): every long step checks it and stops.
STOP = threading.Event()
#: Set when a HiGHS solve was left running on its thread after a Ctrl-C: the command must then
#: end with :func:`finish_abandoned` (os._exit), since the interpreter cannot shut down around it.
ABANDONED = threading.Event()
_in_solver = threading.Event()
#: Set by a second Ctrl-C: :func:`on_worker` abandons a solve that allows it at its next poll.
_HURRY = threading.Event()
_reason: list[str] = []  # why a guard stopped the step, read by the SIGINT handler


class StepLimit(CooptError):
    """A step went past its memory or time limit and was stopped."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind  # "memory" or "time"


def _on_sigint(signum, frame) -> None:
    if _reason:
        STOP.set()
        if not _in_solver.is_set():
            kind, message = _reason[0].split(":", 1)
            raise StepLimit(message, kind)
        return
    if not STOP.is_set():
        STOP.set()
        if _in_solver.is_set():
            return  # the solver stops at its next check and keeps its incumbent
        raise KeyboardInterrupt
    # a further Ctrl-C while the run already winds down
    if _in_solver.is_set() or not _HURRY.is_set():
        _HURRY.set()  # raising here could surface inside a solver's call, or while writing
        return
    raise KeyboardInterrupt


@contextmanager
def stoppable() -> Iterator[None]:
    """Install the Ctrl-C handler for the duration of a command (main thread only). When the block
    ends after a stop, the command is about to write what finished: from then on Ctrl-C is ignored
    (the previous handler is not restored), so a late one cannot kill the process mid-write."""
    STOP.clear()
    ABANDONED.clear()
    _HURRY.clear()
    _reason.clear()
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        # ignored by the kernel, not by a Python handler: interpreter shutdown would reset that one
        signal.signal(signal.SIGINT, signal.SIG_IGN if STOP.is_set() else previous)


@contextmanager
def in_solver() -> Iterator[None]:
    """Mark a solve that watches :data:`STOP` (HiGHS through its interrupt callbacks, CP-SAT
    through :func:`on_worker`'s stop request): a Ctrl-C inside it stops the solver instead of
    raising."""
    _in_solver.set()
    try:
        yield
    finally:
        _in_solver.clear()


def finish_abandoned(code: int) -> None:
    """End the process now when a solve was abandoned (after the command wrote what it had)."""
    if ABANDONED.is_set():
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def interrupt_requested(event) -> None:
    """A HiGHS interrupt callback: end the solve once :data:`STOP` is set."""
    if STOP.is_set():
        event.interrupt()


def resident_bytes() -> int:
    """This process's resident memory (Linux /proc; 0 where unknown)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def total_memory() -> int:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


@contextmanager
def guard(what: str, *, seconds: float | None = None, memory_bytes: int | None = None) -> Iterator[None]:
    """Stop ``what`` (a phrase: "building the model") past ``seconds`` or above ``memory_bytes``."""
    main = threading.current_thread() is threading.main_thread()
    if (seconds is None and memory_bytes is None) or not main:
        yield
        return
    done = threading.Event()
    start = time.perf_counter()

    def watch() -> None:
        while not done.wait(0.1):
            if seconds is not None and time.perf_counter() - start > seconds:
                _reason.append(f"time:{what} took longer than the time limit of {seconds:g} s")
            elif memory_bytes is not None and resident_bytes() > memory_bytes:
                _reason.append(f"memory:{what} needed more than {memory_bytes / 2**30:.1f} GiB of memory "
                               "(the limit; raise it with --max-memory)")
            else:
                continue
            _thread.interrupt_main(signal.SIGINT)
            return

    thread = threading.Thread(target=watch, daemon=True)
    installed = signal.getsignal(signal.SIGINT) is _on_sigint
    previous = None if installed else signal.signal(signal.SIGINT, _on_sigint)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        if _reason:
            kind, message = _reason.pop().split(":", 1)
            _reason.clear()
            STOP.clear()
            raise StepLimit(message, kind)


class Abandoned(Exception):
    """A solver did not stop within its grace after a Ctrl-C; it is left running on its thread."""


def on_worker(call: Callable[[], Any], *, name: str, on_stop: Callable[[], None] | None = None,
              grace: float | None = None, on_abandon: Callable[[], None] | None = None) -> Any:
    """``call()`` on a daemon worker thread while this one waits in Python, where signal handlers
    run, so that a Ctrl-C is heard at once; its result (or its exception) is handed back.

    When :data:`STOP` is set, ``on_stop()`` runs once (a solver's own stop request). With ``grace``,
    a worker still running ``grace`` seconds after that, or at once after a second Ctrl-C, is
    abandoned: ``on_abandon()`` runs, :data:`ABANDONED` is set and :class:`Abandoned` raised; a
    ``KeyboardInterrupt`` heard while waiting (no :func:`stoppable` handler) abandons it the same
    way and goes on up. Off
    the main thread, ``call()`` runs here (only the main thread hears signals). Either way the
    call runs :func:`in_solver`."""
    if threading.current_thread() is not threading.main_thread():
        with in_solver():
            return call()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:  # handed to the waiting thread, which raises it
            box["error"] = exc

    worker = threading.Thread(target=work, name=name, daemon=True)
    with in_solver():  # a Ctrl-C now sets STOP instead of raising
        worker.start()
        deadline = None
        try:
            while worker.is_alive():
                worker.join(0.05)
                if not STOP.is_set() or not worker.is_alive():
                    continue
                if deadline is None:
                    deadline = time.perf_counter() + (grace if grace is not None else float("inf"))
                    if on_stop is not None:
                        on_stop()
                if time.perf_counter() > deadline or (grace is not None and _HURRY.is_set()):
                    if on_abandon is not None:
                        on_abandon()
                    ABANDONED.set()
                    raise Abandoned
        except KeyboardInterrupt:  # no stoppable() handler (a bench task in this process): leave it
            if worker.is_alive():
                if on_stop is not None:
                    on_stop()
                if on_abandon is not None:
                    on_abandon()
                ABANDONED.set()
            raise
    if "error" in box:
        raise box["error"]
    return box["result"]


def timed_out(step: Callable[[], Any], seconds: float | None, what: str) -> tuple[bool, Any]:
    """``(False, step())``, or ``(True, None)`` when ``step`` ran past ``seconds`` (None: no limit)
    and was stopped there (:func:`guard`): how a pure-Python exact method honours the time limit
    and answers ``time_limit`` with its best so far instead of running on."""
    try:
        with guard(what, seconds=seconds):
            return False, step()
    except StepLimit as exc:
        if exc.kind != "time":
            raise
        return True, None


class StandardStreams:
    """Standard output and error as they are now, to give back after a solver that captured them
    was abandoned or interrupted (it never restores them itself)."""

    def __init__(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        self.fds = {fd: os.dup(fd) for fd in (1, 2)}
        self.streams = (sys.stdout, sys.stderr)

    def restore(self) -> None:
        for fd, copy in self.fds.items():
            os.dup2(copy, fd)
        sys.stdout, sys.stderr = self.streams

    def close(self) -> None:
        for copy in self.fds.values():
            os.close(copy)
        self.fds = {}
