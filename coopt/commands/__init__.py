"""Extra CLI sub-commands. Each module here defines ``register(subparsers)``, which adds one
sub-command whose handler (``set_defaults(func=...)``) takes the parsed args and returns the exit
status. :mod:`coopt.cli` loads them all, so a problem or subsystem adds its own command
(``coopt bound``, ``coopt bench``, ``coopt simulate``) without editing the CLI."""


def leave_solver_threads(code: int) -> None:
    """End the process now, once everything is written, where a solver still runs on a worker
    thread (an interrupt left it behind): letting Python shut down under it would abort the process."""
    import os
    import sys
    import threading

    if any(t.name in ("highs", "cp-sat") and t.is_alive() for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
