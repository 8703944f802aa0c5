"""Errors the user can act on. The CLI prints them as one line and exits with status 2."""

from __future__ import annotations


class CooptError(Exception):
    """Base class for errors caused by the user's input, never by a bug in coopt."""


class InstanceError(CooptError):
    """An instance file is missing, malformed or inconsistent.

    The message always names the file, the field and what was expected.
    """

    def __init__(self, path: str, field: str | None, expected: str):
        self.path, self.field, self.expected = path, field, expected
        where = f"{path}: field '{field}'" if field else path
        super().__init__(f"{where}: {expected}")
        #: Every error this one stands for (itself, or the several of :meth:`combine`).
        self.errors: list[InstanceError] = [self]

    @classmethod
    def combine(cls, errors: list[InstanceError]) -> InstanceError:
        """One error that reports several: its message has one line per error."""
        unique = list({str(e): e for e in errors}.values())
        if len(unique) == 1:
            return unique[0]
        first = unique[0]
        combined = cls(first.path, first.field, first.expected)
        combined.args = ("\n".join(str(e) for e in unique),)
        combined.errors = unique
        return combined


class UsageError(CooptError):
    """A command-line argument names something that does not exist or is out of range."""
