"""The shipped instance files: ``coopt/instances/<problem>/*.toml``, package data installed with coopt
(``instances/`` at the top of a checkout links to them).

File names are tiered: ``0-*`` small (every method, exact included, in seconds), ``1-*`` medium,
``2-*`` large. A shipped file may be named on the command line as ``<problem>/<file>`` (with or
without ``.toml``), or by its file name alone where only one problem ships it.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from coopt.errors import UsageError


def instances_dir() -> Path:
    """Where the shipped instances are: inside the installed package, wherever it runs from."""
    return Path(str(resources.files("coopt") / "instances"))


def shipped(problem: str) -> list[Path]:
    """Shipped instance files of one problem, sorted so the small ones come first."""
    return sorted((instances_dir() / problem).glob("*.toml"))


def small_shipped(problem: str) -> list[Path]:
    """The small tier (``0-*.toml``): solved exactly in seconds; used by tests and the showcase."""
    return [p for p in shipped(problem) if p.name.startswith("0-")]


def resolve(argument: str) -> Path:
    """A path as given, or the shipped file it names (``topoopt/0-exact-n6-d2``, ``0-exact-n6-d2``).
    An existing path always wins; a bare name two problems ship is refused, naming both."""
    path = Path(argument)
    if path.exists() or not argument or argument.startswith((".", "/", "~")):
        return path
    name = argument if argument.endswith(".toml") else f"{argument}.toml"
    root = instances_dir()
    if "/" in name:
        candidate = root / name
        return candidate if candidate.is_file() else path
    found = sorted(root.glob(f"*/{name}"))
    if len(found) > 1:
        names = ", ".join(f"{p.parent.name}/{p.stem}" for p in found)
        raise UsageError(f"{argument}: names a shipped instance of several problems ({names}); say which")
    return found[0] if found else path
