"""bound_length (pattern + minLength/maxLength): differential against Python `re` and len().

Sound always (never a string outside the pattern or the bounds); exact where it says so.
"""

import itertools
import random
import re

import pytest

from deepinfer.constraints import ir
from deepinfer.constraints.frontends.json.length import bound_length
from deepinfer.constraints.frontends.json.pattern import parse_pattern
from deepinfer.constraints.frontends.json.regex import grammar_to_regex

ALPHABET = "abcx-.@ 0"

CASES = [  # pattern, minLength, maxLength, must be exact
    ("b", 0, 3, True),                      # unanchored: "b00" is valid
    ("a*b*c*", 1, 4, True),                 # was reported unsatisfiable
    ("^[a-z]+-[a-z]+$", 3, 10, True),
    ("^(ab|c)*$", 2, 5, True),
    ("x", 2, None, True),
    ("^a?b?c?d?$", 2, 3, True),
    ("^(a|bb)+$", 3, 4, True),
    ("^(a|bb){2,9}$", 0, 5, True),
    ("^[a-c]*x[a-c]*0[a-c]*$", 4, 6, True),
    ("^\\S+@\\S+$", 0, 254, False),
    ("^([a-z0-9]+\\.)*[a-z]+$", 1, 20, False),
    ("^([a-c]+ )*[a-c]+$", 5, 7, False),
]


def _strings():
    rng = random.Random(0)
    for n in range(0, 5):
        for t in itertools.product(ALPHABET, repeat=n):
            yield "".join(t)
    for n in range(5, 12):
        for _ in range(1500):
            yield "".join(rng.choice(ALPHABET) for _ in range(n))


@pytest.mark.parametrize("pattern,lo,hi,exact", CASES)
def test_bound_length_against_re(pattern, lo, hi, exact):
    expr, is_exact = bound_length(parse_pattern(pattern), lo, hi)
    assert expr != ir.NOTHING
    rx = re.compile(grammar_to_regex(ir.Grammar({"start": expr})), re.S)
    if exact:
        assert is_exact
    for s in _strings():
        want = re.search(pattern, s) is not None and lo <= len(s) and (hi is None or len(s) <= hi)
        got = rx.fullmatch(s) is not None
        assert not got or want, f"accepted {s!r}"
        if exact:
            assert got == want, f"rejected {s!r}"


def test_common_valid_strings_kept_when_approximate():
    expr, _ = bound_length(parse_pattern("^\\S+@\\S+$"), 0, 254)
    rx = re.compile(grammar_to_regex(ir.Grammar({"start": expr})), re.S)
    assert rx.fullmatch("john.doe@example.com")
    assert rx.fullmatch("a" * 120 + "@" + "b" * 120)


def test_empty_intersection_is_nothing():
    assert bound_length(parse_pattern("^abc$"), 4, None)[0] == ir.NOTHING
    assert bound_length(parse_pattern("^a{5,}$"), 0, 4)[0] == ir.NOTHING
