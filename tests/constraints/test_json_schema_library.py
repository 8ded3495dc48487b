"""The ready-made constraints in constraints/ lower and behave as documented."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from deepinfer.constraints.frontends.json.match import matches
from deepinfer.constraints.frontends.json.schema import lower_json_schema
from deepinfer.constraints.frontends.regex import lower_regex

ROOT = Path(__file__).resolve().parents[2] / "constraints"

EXAMPLES = {
    "invoice.json": (
        [{"invoice_number": "INV-00042", "issue_date": "2024-02-29", "currency": "EUR",
          "customer": {"name": "ACME", "email": "billing@acme.example"},
          "lines": [{"description": "Widget", "quantity": 3, "unit_price": 9.5}], "tax_rate": 0.2}],
        [{"invoice_number": "INV-42", "issue_date": "2024-02-29", "currency": "EUR",
          "customer": {"name": "ACME"}, "lines": [{"description": "W", "quantity": 1, "unit_price": 1}]},
         {"invoice_number": "INV-00042", "issue_date": "2023-02-29", "currency": "EUR",
          "customer": {"name": "ACME"}, "lines": [{"description": "W", "quantity": 1, "unit_price": 1}]}]),
    "person.json": (
        [{"first_name": "Ada", "last_name": "Lovelace", "age": 36, "phone": "+44 20 7946 0958",
          "address": {"city": "London", "country": "GB"}, "tags": ["work", "vip"]}],
        [{"first_name": "Ada", "last_name": "Lovelace", "tags": ["vip", "vip"]},
         {"first_name": "Ada", "last_name": "Lovelace", "age": 151}]),
    "product_review.json": (
        [{"product_id": "B00X4WHP5E", "rating": 4, "sentiment": "positive", "confidence": 0.87,
          "summary": "Sturdy and cheap.", "aspects": [{"aspect": "price", "sentiment": "positive"}]}],
        [{"product_id": "B00X4WHP5E", "rating": 6, "sentiment": "positive", "summary": "x"},
         {"product_id": "B00X4WHP5E", "rating": 4, "sentiment": "great", "summary": "x"}]),
    "event.json": (
        [{"title": "Stand-up", "start": "2024-05-01T09:00:00Z", "end": "2024-05-01T09:15:00Z"},
         {"title": "Holiday", "start": "2024-05-01T00:00:00Z", "all_day": True, "date": "2024-05-01"}],
        [{"title": "Stand-up", "start": "2024-05-01T09:00:00Z"},
         {"title": "Holiday", "start": "2024-05-01T00:00:00Z", "all_day": True, "end": "2024-05-02T00:00:00Z"}]),
}

REGEX_EXAMPLES = {
    "email.regex": (["ada@example.com", "a.b+c@mail.example.org"], ["ada@", "@example.com", "a b@x.io"]),
    "phone.regex": (["+1 415 555 2671", "+44 (20) 7946 0958", "415-555-0199"], ["12", "phone", "++1 415"]),
    "iso_date.regex": (["2024-01-31", "1999-12-01"], ["2024-13-01", "2024-1-01", "24-01-01"]),
    "semver.regex": (["1.0.0", "2.10.3-rc.1+build.5"], ["1.0", "01.0.0", "1.0.0-"]),
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_json_schemas(name):
    schema = json.loads((ROOT / "json" / name).read_text())
    checker = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    grammar = lower_json_schema(schema)
    good, bad = EXAMPLES[name]
    for value in good:
        assert checker.is_valid(value)
        assert matches(grammar, json.dumps(value, ensure_ascii=False))
    for value in bad:
        assert not checker.is_valid(value)
        assert not matches(grammar, json.dumps(value, ensure_ascii=False))


@pytest.mark.parametrize("name", sorted(REGEX_EXAMPLES))
def test_regexes(name):
    import re

    pattern = (ROOT / "regex" / name).read_text().strip()
    grammar = lower_regex(pattern)
    good, bad = REGEX_EXAMPLES[name]
    for text in good:
        assert re.fullmatch(pattern, text) and matches(grammar, text), text
    for text in bad:
        assert not re.fullmatch(pattern, text) and not matches(grammar, text), text
