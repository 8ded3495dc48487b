"""Non-integer number languages stay non-integral after json.loads.

`not: {type: integer}`, `oneOf: [integer, number]`, `if: {type: integer}, then: false` and
`not: {multipleOf: k}` generate numbers that must not be integers; but json.loads turns
decimals such as 1.00000000000000001, 9007199254740993.5 or 4812960458624154221286.5 into
integral floats, which jsonschema (draft-06+: an integral float is an integer; every draft:
an integral float is a multiple of 1) then counts as integers / multiples. The non-integer
language is now written without an exponent, with at most 15 significant digits and |x| >= 1e-16
(json_scalars.FRACTIONAL): such a decimal's float is integral only if the decimal is. Found by
an adversarial review (the texts below); every row and walk here failed before the fix."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from deepinfer.constraints import Matcher

from json_verdicts import BYTE_COMPILER as COMPILER, EOS, accepts, validator

D4 = "http://json-schema.org/draft-04/schema#"

NOT_INTEGER = {"type": "number", "not": {"type": "integer"}}
ONE_OF = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
IF_INTEGER = {"type": "number", "if": {"type": "integer"}, "then": False}
NOT_MULT_1 = {"type": "number", "not": {"multipleOf": 1}}
NOT_MULT_2 = {"type": "number", "not": {"multipleOf": 2}, "maximum": 10}
BOUNDED = {"type": "number", "not": {"type": "integer"}, "minimum": -3.5, "maximum": 1e6}
POSITIVE = {"type": "number", "not": {"type": "integer"}, "exclusiveMinimum": 0}
DRAFT4_MULT = {"$schema": D4, "type": "number", "not": {"multipleOf": 1}}

BIG = ["4812960458624154221286.5", "9007199254740993.5", "12345678901234567.5",
       "66512565731400076384028330026.120000", "-9007199254740993.5"]
NEAR_ONE = ["1.00000000000000001", "-1.00000000000000001", "0.99999999999999999"]

# (schema, texts whose float is integral: must be rejected, ordinary non-integers: still accepted).
# Draft 4's `not: {type: integer}` is left out: there an integral float is not an integer, so these
# texts are valid (and rejected anyway, a loss); its `multipleOf` does count 1.0 a multiple of 1.
ROWS = [
    (NOT_INTEGER, BIG + NEAR_ONE + ["100000000000000000000.5"], ["0.5", "-2.25", "1.5", "99999999999999.9"]),
    (ONE_OF, BIG + NEAR_ONE, ["0.5", "-2.25", "3.125"]),
    (IF_INTEGER, BIG + NEAR_ONE, ["0.5", "-2.25", "0.000000000000001"]),
    (NOT_MULT_1, BIG + NEAR_ONE, ["0.5", "-2.25", "7.75"]),
    (NOT_MULT_2, ["2.00000000000000001", "9.99999999999999999", "-9007199254740993.5", "1.99999999999999999"],
     ["0.5", "-2.25", "9.5", "3", "-1"]),
    (BOUNDED, ["1.00000000000000001", "999999.99999999999999", "-2.99999999999999999"],
     ["0.5", "-2.25", "999999.5", "-3.5"]),
    (POSITIVE, BIG[:4] + NEAR_ONE[:1] + ["0.99999999999999999"], ["0.5", "2.25", "0.0000000000000001"]),
    (DRAFT4_MULT, BIG + NEAR_ONE, ["0.5", "-2.25"]),
]


@pytest.mark.parametrize("schema,integral,ordinary", ROWS, ids=[str(i) for i in range(len(ROWS))])
def test_integral_floats_rejected(schema, integral, ordinary):
    v = validator(schema)
    for text in integral:
        assert not v.is_valid(json.loads(text)), f"table error: {text} should be invalid"
        assert not accepts(schema, text), f"{text} (float {json.loads(text)!r}) accepted by {schema}"
    for text in ordinary:
        assert v.is_valid(json.loads(text)), f"table error: {text} should be valid"
        assert accepts(schema, text), f"{text} rejected by {schema}"


def _mask(m: Matcher) -> np.ndarray:
    row = np.zeros((1, m.compiled.vocab.words), dtype=np.int32)
    m.fill_next_token_bitmask(row, 0)
    return np.flatnonzero(np.unpackbits(row[0].view(np.uint8), bitorder="little"))


def _walk(compiled, rng: random.Random) -> str:
    """A random mask-guided output: allowed bytes until a drawn length, then the end as soon as
    it is allowed (long integer parts and long fractions are what used to go wrong)."""
    m = Matcher(compiled)
    target, out = rng.randrange(1, 45), bytearray()
    for _ in range(200):
        allowed = [int(t) for t in _mask(m)]
        assert allowed, f"dead end after {bytes(out)!r}"
        if EOS in allowed and (len(out) >= target or allowed == [EOS]):
            assert m.accept_token(EOS)
            return out.decode()
        tok = rng.choice([t for t in allowed if t != EOS])
        assert m.accept_token(tok)
        out.append(tok)
    raise AssertionError(f"no end after {bytes(out)!r}")


@pytest.mark.parametrize("schema", [NOT_INTEGER, ONE_OF, IF_INTEGER, NOT_MULT_1, DRAFT4_MULT, POSITIVE],
                         ids=["not-integer", "oneOf", "if-then-false", "not-multipleOf-1", "draft4-multipleOf",
                              "positive"])
def test_random_walks_validate(schema):
    compiled = COMPILER.compile_json_schema(schema)
    v = validator(schema)
    rng = random.Random(20240611)
    for _ in range(60):
        text = _walk(compiled, rng)
        assert v.is_valid(json.loads(text)), f"{text} (float {json.loads(text)!r}) accepted by {schema}"


def test_random_decimals_near_integers():
    """Many random decimals close to integers (runs of 0s and 9s, long integer parts, long fractions,
    zeros after the point): whatever is accepted parses to a non-integral float, and the short ones
    (up to 15 significant digits, |x| >= 1e-16) are all accepted."""
    compiled = COMPILER.compile_json_schema(NOT_INTEGER)
    rng = random.Random(7)
    short_seen = 0
    for _ in range(3000):
        digits = lambda n: "".join(rng.choice("0999012345678") for _ in range(n))  # noqa: E731
        ip = rng.choice(["0", str(rng.randrange(1, 10)) + digits(rng.randrange(0, 25))])
        frac = "0" * rng.randrange(0, 20) + digits(rng.randrange(0, 20)) + str(rng.randrange(1, 10))
        text = rng.choice(["", "-"]) + ip + "." + frac + "0" * rng.randrange(0, 3)
        m = Matcher(compiled)
        accepted = all(m.accept_token(b) for b in text.encode()) and m.is_completed()
        value = json.loads(text)
        if accepted:
            assert not value.is_integer(), f"{text} accepted, parses to {value!r}"
        significant = (ip + frac).lstrip("0")
        if len(significant) <= 15 and abs(value) >= 1e-16:
            short_seen += 1
            assert accepted, f"{text} rejected"
    assert short_seen > 300
