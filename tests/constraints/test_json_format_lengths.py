"""`format` with `maxLength`: the product of the format's DFA with a character counter where
the per-part length budgets are inexact or too large (`format: uri` with `maxLength: 255` blew
the NFA limit; `uri-reference` with 2048 the DFA limit). Exact where the product fits; else a
smaller cap, noted, and sound: never a string over the limit, never one outside the format."""

from __future__ import annotations

import json
import re

import pytest
from json_verdicts import BYTE_COMPILER, accepts

from deepinfer.constraints.regular import dfa_ops
from deepinfer.constraints.frontends.json.formats import FORMAT_REGEXES

URI = "https://example.com/a/b?q=1#frag"


def _uri(length: int) -> str:
    return (URI + "x" * length)[:length] if length > len(URI) else URI[:length]


@pytest.mark.parametrize("fmt,hi,exact", [("uri", 255, True), ("uri", 100, True), ("uri-reference", 2048, False)])
def test_uri_with_max_length(fmt, hi, exact):
    schema = {"type": "string", "format": fmt, "maxLength": hi}
    notes = BYTE_COMPILER.compile_json_schema(schema).grammar.annotations
    assert exact == (not notes), notes
    fmt_re = re.compile(FORMAT_REGEXES[fmt])
    for n in (len(URI), 60, 99, 100, 101, 200, 255, 256, 400):
        text = _uri(n)
        ok = fmt_re.fullmatch(text) is not None and len(text) <= hi
        got = accepts(schema, json.dumps(text))
        assert got <= ok, text  # sound
        if exact:
            assert got == ok, text
    assert accepts(schema, json.dumps(URI)) and not accepts(schema, '"not a uri"')


def test_length_counter_is_the_length_language():
    """dfa_ops.length_dfa counts characters as `.{lo,hi}` does, multi-byte ones included."""
    from deepinfer.constraints import ir
    from deepinfer.constraints.regular.json_strings import ANY_CHAR

    for lo, hi in [(0, 3), (2, 5), (3, None), (0, None), (1, 1)]:
        got = dfa_ops.intersect(dfa_ops.length_dfa(lo, hi), dfa_ops.expr_dfa(ir.repeat(ANY_CHAR)))
        want = dfa_ops.expr_dfa(ir.repeat(ANY_CHAR, lo, hi))
        assert (got.trans.tobytes(), got.accepting.tobytes()) == (want.trans.tobytes(), want.accepting.tobytes())


@pytest.mark.parametrize("hi", [4096, 65536])
def test_huge_max_length_compiles_with_a_noted_cap(hi):
    schema = {"type": "string", "format": "uri", "maxLength": hi}
    notes = BYTE_COMPILER.compile_json_schema(schema).grammar.annotations
    assert any("are not generated" in n for n in notes)
    assert accepts(schema, json.dumps(URI))


def test_long_max_length_with_a_pattern_compiles_with_a_noted_cap():
    """It used to fail on the automaton size limit."""
    schema = {"type": "string", "maxLength": 100000, "pattern": "^[a-z]*$"}
    notes = BYTE_COMPILER.compile_json_schema(schema).grammar.annotations
    assert any("are not generated" in n for n in notes)
    assert accepts(schema, '"abc"') and not accepts(schema, '"aB"')


def test_skipping_an_unbuildable_bound_keeps_the_pattern():
    """strict=False skips the length bound it cannot build, not the pattern next to it."""
    from deepinfer.constraints import Matcher

    compiled = BYTE_COMPILER.compile_json_schema({"type": "string", "minLength": 100000, "pattern": "^[a-z]*$"},
                                                 strict=False)
    assert any("skipped /minLength" in n for n in compiled.grammar.annotations)

    def takes(text: str) -> bool:
        m = Matcher(compiled)
        return all(m.accept_token(b) for b in text.encode()) and m.is_completed()
    assert takes('"abc"') and not takes('"aB"')
