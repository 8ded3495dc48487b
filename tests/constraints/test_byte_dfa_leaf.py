"""DFA leaves in the IR (ir.ByteDfa): languages with no compact expression, such as a `pattern`
intersected with `format: email`, compile to their DFA instead of failing.

Checked three ways: the leaf's JSON string encoding is the very language encode_expr gives for
an equivalent expression (equal minimal DFAs); a leaf embedded in a grammar reads what its
expression reads; and schemas that used to fail ("no compact expression") now give matchers
whose verdicts agree, string by string, with Python's `re` on the pattern and the format's regex.
"""

from __future__ import annotations

import json
import re

import pytest
from json_verdicts import accepts

from deepinfer.constraints.regular import dfa_ops
from deepinfer.constraints import ir
from deepinfer.constraints.frontends.json.formats import FORMAT_REGEXES
from deepinfer.constraints.frontends.json.pattern import parse_pattern
from deepinfer.constraints.regular.json_strings import encode_dfa, encode_expr

LANGUAGES = [
    r"[a-z]+@[a-z]+\.com",
    r"[\s\S]{0,3}",                 # every character: controls, quote, backslash, slash, unicode
    r'a"b\\c/d',
    r"[\x00-\x1f]+x?",
    r"(?:é|日本|😀)*[\t\n]",
    r"[^a]*",
]


@pytest.mark.parametrize("pattern", LANGUAGES)
def test_encoded_leaf_is_the_encoded_expression(pattern):
    expr = parse_pattern(f"^{pattern}$")
    leaf = dfa_ops.as_leaf(dfa_ops.expr_dfa(expr))
    assert isinstance(leaf, ir.ByteDfa)
    want = dfa_ops.expr_dfa(encode_expr(expr))
    got = dfa_ops.expr_dfa(encode_dfa(leaf))
    assert got.digest == want.digest


@pytest.mark.parametrize("pattern", LANGUAGES)
def test_leaf_inside_a_grammar_reads_its_language(pattern):
    expr = parse_pattern(f"^{pattern}$")
    leaf = dfa_ops.as_leaf(dfa_ops.expr_dfa(expr))
    around = [ir.Literal("<"), ir.repeat(ir.Literal("-"), 0, 2), ir.Literal(">")]
    built = dfa_ops.expr_dfa(ir.seq(around[0], leaf, around[1], leaf, around[2]))
    direct = dfa_ops.expr_dfa(ir.seq(around[0], expr, around[1], expr, around[2]))
    assert built.digest == direct.digest
    assert "automaton" in ir.to_ebnf(leaf)


def test_leaf_equality_is_language_equality():
    a = dfa_ops.as_leaf(dfa_ops.expr_dfa(parse_pattern("^(?:ab|ac)$")))
    b = dfa_ops.as_leaf(dfa_ops.expr_dfa(parse_pattern("^a[bc]$")))
    c = dfa_ops.as_leaf(dfa_ops.expr_dfa(parse_pattern("^a[bd]$")))
    assert a == b and hash(a) == hash(b) and a != c


EMAIL = re.compile(FORMAT_REGEXES["email"])
HOSTNAME = re.compile(FORMAT_REGEXES["hostname"])
CASES = [  # (format, its regex, pattern, strings to try)
    ("email", EMAIL, r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$",
     ["john.doe@example.com", "a@b.co", "a@b.c", "a..b@example.com", ".a@example.com", "a@-x.com",
      "a@x-.com", "x@" + "a" * 62 + ".com", "x@" + "a" * 64 + ".com", "a b@x.com", "a@x", "A%B@X.ORG",
      "a@b.c.d.e.fr", "a@1.2.3.4", "", "@x.com"]),
    ("email", EMAIL, r"^\S+@\S+\.\S+$",
     ["a@b.cd", "a@b", "é@x.com", "a\"b@x.com", "a\\b@x.com", "a/b@x.com", "a@x.c-m", "a\t@x.com"]),
    ("hostname", HOSTNAME, r"^[a-z0-9.-]+$",
     ["example.com", "Example.com", "a", "a.b.c.d", "-a.com", "a-.com", "a" * 63, "a" * 64, "1a.com", "a.1"]),
]


@pytest.mark.parametrize("fmt,fmt_re,pattern,strings", CASES)
def test_pattern_with_format_compiles_and_agrees_with_re(fmt, fmt_re, pattern, strings):
    schema = {"type": "string", "format": fmt, "pattern": pattern}
    for s in strings:
        want = bool(re.search(pattern, s)) and fmt_re.fullmatch(s) is not None
        assert accepts(schema, json.dumps(s, ensure_ascii=False)) == want, s


@pytest.mark.parametrize("lo,hi", [(0, 12), (8, None), (5, 9)])
def test_length_bounds_on_a_leaf(lo, hi):
    pattern = r"^[a-z.]+@[a-z.-]+\.[a-z]{2,}$"
    schema = {"type": "string", "format": "email", "pattern": pattern, "minLength": lo}
    if hi is not None:
        schema["maxLength"] = hi
    for s in ["a@b.cd", "ab@cd.ef", "abcdef@gh.ij", "abcdefghij@klm.no", "a.b@c.de"]:
        want = (bool(re.search(pattern, s)) and EMAIL.fullmatch(s) is not None
                and lo <= len(s) and (hi is None or len(s) <= hi))
        assert accepts(schema, json.dumps(s)) == want, s


def test_excluded_values_come_out_of_a_leaf():
    schema = {"type": "string", "format": "email", "pattern": r"^\S+@\S+\.\S+$",
              "not": {"enum": ["a@b.cd", "x@y.zz"]}}
    assert not accepts(schema, '"a@b.cd"') and not accepts(schema, '"x@y.zz"')
    assert accepts(schema, '"a@b.ce"')


def test_reference_matcher_reads_leaves():
    from deepinfer.constraints.frontends.json.match import matches
    from deepinfer.constraints.frontends.json.schema import lower_json_schema

    fmt, fmt_re, pattern, strings = CASES[1]
    grammar = lower_json_schema({"type": "string", "format": fmt, "pattern": pattern}, whitespace="compact")
    assert "automaton" in str(grammar)
    for s in strings:
        want = bool(re.search(pattern, s)) and fmt_re.fullmatch(s) is not None
        assert matches(grammar, json.dumps(s, ensure_ascii=False)) == want, s


PASSWORDS = ["Password1", "password1", "PASSWORD", "Pass1", "Abcdefg1", "Abc def1!", "A1" + "x" * 30,
             "A1" + "x" * 31, "aB3$aB3$", "ééééééA1", "Ü1" + "é" * 6]


@pytest.mark.parametrize("pattern", [r"^(?=.*[A-Z])(?=.*\d).{8,32}$",
                                     r"^(?=.*\d)(?=.*[a-z])(?=.*[A-Z])(?!.*\s).{8,20}$"])
def test_counting_lookaheads_compile_to_a_leaf(pattern):
    """Password rules with a bounded length: flags times counts, no compact expression."""
    schema = {"type": "array", "items": {"type": "string", "pattern": pattern}}
    for s in PASSWORDS:
        assert accepts(schema, json.dumps([s], ensure_ascii=False)) == bool(re.search(pattern, s)), s


def test_a_leaf_too_big_in_context_fails_the_compile():
    """Without `^` the leaf follows `.*`: that lexeme is determinized at compile time, and its
    size error is the compile's (not a lexeme that matches nothing at generation time)."""
    from deepinfer.constraints import ConstraintError

    with pytest.raises(ConstraintError, match="pattern"):
        accepts({"type": "string", "pattern": r"(?=.*[A-Z])(?=.*\d).{8,32}$"}, '"Password1"')
