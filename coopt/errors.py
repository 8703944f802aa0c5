"""Errors the user can act on. The CLI prints them as one line and exits with status 2."""


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


class UsageError(CooptError):
    """A command-line argument names something that does not exist or is out of range."""
