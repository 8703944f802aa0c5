"""The TOML field reader: each accessor's type and range checks, and unknown-key detection."""

import pytest

from coopt.errors import InstanceError
from coopt.fields import Fields


def fields(**table) -> Fields:
    return Fields(table, "f.toml")


def test_scalars_and_defaults():
    f = fields(n=3, x=2.5, s="a", b=True)
    assert f.int("n", min=1) == 3
    assert f.float("x", positive=True) == 2.5
    assert f.str("s", choices=("a", "b")) == "a"
    assert f.bool("b") is True
    assert f.int("absent", default=7) == 7
    f.finish()


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda f: f.int("x"), "field 'x': expected an integer, got 2.5"),
        (lambda f: f.int("n", max=2), "field 'n': expected a value <= 2, got 3"),
        (lambda f: f.int("b"), "field 'b': expected an integer, got True"),
        (lambda f: f.float("s"), "field 's': expected a number, got 'a'"),
        (lambda f: f.str("s", choices=("b",)), "field 's': expected one of 'b', got 'a'"),
        (lambda f: f.numbers("v", min=0), "field 'v[1]': expected a value >= 0, got -1.0"),
        (lambda f: f.matrix("m"), "field 'm[1]': expected 2 entries, got 1"),
        (lambda f: f.table("t").int("k"), "field 't.k': is missing"),
        (lambda f: f.tables("rows")[1].float("w", positive=True), "field 'rows[1].w': expected a number > 0"),
    ],
)
def test_errors_name_file_field_and_expectation(call, message):
    f = fields(x=2.5, n=3, b=True, s="a", v=[1, -1], m=[[1, 2], [3]], t={}, rows=[{"w": 1}, {"w": 0}])
    with pytest.raises(InstanceError) as err:
        call(f)
    assert str(err.value).startswith("f.toml: ") and message in str(err.value)


def test_unknown_keys_reported_with_dotted_name():
    f = fields(a=1, t={"k": 1, "typo": 2})
    f.int("a")
    f.table("t").int("k")
    with pytest.raises(InstanceError, match=r"field 't\.typo': unknown field"):
        f.finish()
