"""The declared-field reader (coopt.schema) on a made-up network problem: SI conversion, defaults,
lengths by name, conditional fields, sub-tables, every error at once, suggestions, the example."""

from __future__ import annotations

import tomllib

import pytest

from coopt.errors import InstanceError
from coopt.fields import Fields
from coopt.schema import Field, Schema

SCHEMA = Schema(
    [
        Field("nodes", "int", "number of nodes", min=2, example=3),
        Field("rate_gbit_per_s", "float", "line rate", unit="Gbit/s", si=1e9, positive=True, example=100.0),
        Field("delay_us", "floats", "per-node delay", unit="us", si=1e-6, length="nodes", default=0.0),
        Field("directed", "bool", "links are one-way", default=False),
        Field("mode", "str", "routing mode", choices=("ksp", "lp"), default="ksp"),
        Field("k_paths", "int", "candidate paths", min=1, required_if="ksp_only", default=1),
        Field("ksp_only", "bool", "restrict to K shortest paths", default=False),
        Field("slots", "ints", "slots per link", min=1, only_if="directed"),
        Field(
            "links", "tables", "the links", min_length=1,
            fields=(
                Field("ends", "ints", "two node indices", length=2, min=0),
                Field("length_km", "float", "fibre length", unit="km", si=1e3, positive=True, example=10.0),
            ),
        ),
        Field("prices", "table", "optional prices", fields=(
            Field("port_usd", "float", "one port", unit="US$", min=0, default=100.0),
        ), default={}),
    ],
    version=2,
    changes={1: "rate_gbps (Gbit/s) is now rate_gbit_per_s"},
)

GOOD = """
nodes = 3
rate_gbit_per_s = 100
delay_us = [1.0, 2.0, 3.0]
[[links]]
ends = [0, 1]
length_km = 2.5
[[links]]
ends = [1, 2]
length_km = 4.0
"""


def read(text: str):
    """As coopt.instance.load reads a file: the field errors and the unknown keys together."""
    fields = Fields(tomllib.loads(text), "net.toml")
    try:
        values = SCHEMA.read(fields)
    except InstanceError as exc:
        raise InstanceError.combine(exc.errors + fields.unknown()) from None
    fields.finish()
    return values


def top(text: str) -> str:
    """GOOD with top-level keys added before its first table."""
    return GOOD.replace("nodes = 3\n", "nodes = 3\n" + text)


def errors_of(text: str) -> list[str]:
    with pytest.raises(InstanceError) as info:
        read(text)
    return [str(e) for e in info.value.errors]


def test_values_come_back_in_si_with_defaults_filled():
    v = read(GOOD)
    assert v.nodes == 3 and v.rate_gbit_per_s == 100e9
    assert v.delay_us == pytest.approx((1e-6, 2e-6, 3e-6))
    assert v.directed is False and v.mode == "ksp" and v.k_paths == 1 and v.slots is None
    assert [link.length_km for link in v.links] == [2500.0, 4000.0]
    assert v.prices.port_usd == 100.0


def test_a_scalar_default_fills_an_array_of_the_named_length():
    v = read(GOOD.replace("delay_us = [1.0, 2.0, 3.0]\n", ""))
    assert v.delay_us == (0.0, 0.0, 0.0)


def test_every_error_of_the_file_is_reported_at_once():
    text = GOOD.replace("nodes = 3", "nodes = 1").replace("length_km = 4.0", "length_km = -4.0")
    text = text.replace("rate_gbit_per_s = 100", 'rate_gbit_per_s = "fast"')
    found = errors_of(text)
    assert any("field 'nodes': expected a value >= 2" in e for e in found), found
    assert any("field 'rate_gbit_per_s': expected a number" in e for e in found), found
    assert any("field 'links[1].length_km': expected a number > 0" in e for e in found), found
    assert all(e.startswith("net.toml: field '") for e in found)


def test_a_misspelt_key_is_named_with_the_closest_field():
    found = errors_of(GOOD.replace("nodes = 3", "nodse = 3"))
    assert any("field 'nodes': is missing" in e for e in found), found
    assert any("field 'nodse': unknown field; did you mean 'nodes'?" in e for e in found), found


def test_required_if_and_only_if():
    assert errors_of(top("ksp_only = true\n")) == [
        "net.toml: field 'k_paths': is missing (required when ksp_only = true)"
    ]
    assert read(top("ksp_only = true\nk_paths = 3\n")).k_paths == 3
    assert errors_of(top("slots = [4, 4]\n")) == ["net.toml: field 'slots': is only read when directed = true"]
    assert read(GOOD.replace("nodes = 3", "nodes = 3\ndirected = true\nslots = [4]")).slots == (4,)


def test_sub_table_lengths_and_minimum_counts():
    found = errors_of(GOOD.replace("ends = [0, 1]", "ends = [0]"))
    assert found == ["net.toml: field 'links[0].ends': expected 2 entries, got 1"]
    no_links = GOOD.split("[[links]]")[0]
    assert errors_of(no_links) == ["net.toml: field 'links': is missing"]


def test_rows_describe_every_field_with_unit_and_presence():
    rows = {row[0]: row for row in SCHEMA.rows()}
    assert rows["rate_gbit_per_s"][2] == "Gbit/s" and rows["rate_gbit_per_s"][3] == "required"
    assert rows["[[links]]"][1] == "array of tables"
    assert rows["links.length_km"][2] == "km"
    assert rows["k_paths"][3] == "required if ksp_only = true, else 1"
    assert rows["slots"][3] == "only with directed = true (required)"
    assert rows["delay_us"][1] == "number array [nodes]"


def test_the_example_reads_back():
    text = SCHEMA.example({})
    v = read(text)
    assert v.nodes == 3 and len(v.links) == 1 and v.links[0].length_km == 10e3
    assert "# line rate [Gbit/s]; required" in text


def test_a_field_declared_twice_is_refused():
    with pytest.raises(ValueError, match="declared twice"):
        Schema([Field("a", "int", "x"), Field("a", "int", "y")])


def test_every_docs_page_shows_the_fields_its_loader_enforces(capsys):
    """The generated fields table of each ``docs/<problem>.md`` is the one ``coopt schema PROBLEM
    --markdown`` prints from the declaration today: a range or field changed in code without
    ``coopt schema --update-docs`` fails here, naming the page."""
    from coopt.commands.schema import update_docs

    assert update_docs(check=True) == 0, capsys.readouterr().out
