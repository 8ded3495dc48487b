"""Shipped constraints resolve by name in the CLI (`--schema invoice`, `--regex email`)."""

from __future__ import annotations

import re

import pytest

from deepinfer.cli.constraint_args import load_regex, load_schema
from deepinfer.errors import UserError


def test_shipped_schemas_and_regexes_by_name():
    schema, where = load_schema("person")
    assert schema["type"] == "object" and where.endswith("person.json")
    for name in ("invoice", "product_review", "event"):
        assert isinstance(load_schema(name)[0], dict)
    pattern, where = load_regex("iso_date")
    assert where.endswith("iso_date.regex") and re.fullmatch(pattern, "2026-11-30")
    assert load_regex("[a-z]+") == ("[a-z]+", "--regex")  # not a name: the pattern itself


def test_unknown_name_lists_the_shipped_ones():
    with pytest.raises(UserError, match="available: .*invoice.*person"):
        load_schema("nope")
