"""The rich consoles every command prints through: one place decides how output looks."""

import sys

from rich.console import Console

#: Piped output (CI logs, files) gets a wide page instead of rich's 80-column default.
_PIPE_WIDTH = 140



def _width(stream) -> int | None:
    return None if stream.isatty() else _PIPE_WIDTH


out = Console(highlight=False, soft_wrap=True, width=_width(sys.stdout))
err = Console(stderr=True, highlight=False, soft_wrap=True, width=_width(sys.stderr))
