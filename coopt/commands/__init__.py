"""Extra CLI sub-commands. Each module here defines ``register(subparsers)``, which adds one
sub-command whose handler (``set_defaults(func=...)``) takes the parsed args and returns the exit
status. :mod:`coopt.cli` loads them all, so a problem or subsystem adds its own command
(``coopt bound``, ``coopt bench``, ``coopt simulate``) without editing the CLI."""
