"""Lexemes read through a leading literal, or a shared head then a literal, without their own
DFA (automaton.py, literal_runs.py, heads.py) give the same masks as the DFA path at every
step, on the real DeepSeek-V4 vocabulary, and leave the key lexemes of untaken properties
unbuilt."""

from __future__ import annotations

import json

import numpy as np
import pytest

from deepinfer.constraints import Matcher
from deepinfer.constraints.cfg.automaton import AT_START, CfgAutomaton
from deepinfer.constraints.cfg.scan.literal_runs import expr_literal
from deepinfer.constraints import ir

from cfg_test_helpers import assert_same_masks_along, same_language

# (schema, instance): objects with several properties (one key lexeme each), nested
# objects and arrays (crossings from "{" / "," into key literals: non-root scopes)
CASES = [
    ({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                       "email": {"type": "string"}, "tags": {"type": "array",
                                       "items": {"type": "string"}}}, "required": ["name"]},
     {"name": "Ann", "age": 31, "tags": ["a", "b"]}),
    ({"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "properties": {"id": {"type": "integer"}, "label": {"type": "string"},
                                         "nested": {"type": "object", "properties": {
                                             "flag": {"type": "boolean"}}}}}}}},
     {"items": [{"id": 1, "label": "x"}, {"id": 2, "nested": {"flag": True}}]}),
    ({"type": "object", "properties": {"$schema": {"type": "string"}, "enabled": {"type": "boolean"},
                                       "count": {"type": "number"}}, "additionalProperties": False},
     {"$schema": "s", "enabled": False, "count": 1.5}),
]


INDENTS = (None, 2, None, 1)
CASES += [
    ({"type": "object", "properties": {"alpha": {"type": "string"}, "beta": {"type": "integer"},
                                       "gamma": {"type": "object", "properties": {
                                           "x": {"type": "number"}, "yy": {"type": "string"}}}}},
     {"alpha": "a", "beta": 2, "gamma": {"x": 1, "yy": "q"}}),
]


def _cfg(compiled) -> CfgAutomaton:
    automaton = compiled.automaton
    automaton = getattr(automaton, "inner", automaton)
    if not isinstance(automaton, CfgAutomaton):
        pytest.skip("schema compiled to another back end")
    return automaton


@pytest.mark.parametrize("case", range(len(CASES)))
def test_literal_threads_equal_dfa_masks(deepseek_compiler, deepseek_vocab, deepseek_tokenizer, case):
    schema, instance = CASES[case]
    compiled = _cfg(deepseek_compiler.compile_json_schema(schema))
    fast = CfgAutomaton(compiled.bnf, deepseek_vocab)      # fresh automata on the same grammar
    slow = CfgAutomaton(compiled.bnf, deepseek_vocab)
    fast.prepare_all()  # head entries are filled lazily (automaton.py)
    if not any(fast._literals):
        pytest.skip("this lowering has no literal-led lexeme")
    n = len(slow._literals)                                   # the DFA path everywhere
    slow._literals, slow._heads, slow._starts = [b""] * n, [None] * n, [AT_START] * n
    slow._initial = slow._with_new_threads(slow.parser.initial_chart(), ())
    text = json.dumps(instance, indent=INDENTS[case % len(INDENTS)])  # whitespace inside heads
    ids = deepseek_tokenizer.encode(text, add_special_tokens=False).ids
    assert_same_masks_along(fast, slow, ids, deepseek_vocab.words)


def test_cases_have_literal_led_and_headed_lexemes(deepseek_compiler):
    automata = [_cfg(deepseek_compiler.compile_json_schema(schema)) for schema, _ in CASES]
    for a in automata:
        a.prepare_all()
    assert any(a._heads[i] is None and a._literals[i] for a in automata for i in range(len(a._heads)))
    assert any(any(a._heads) for a in automata)


def test_untaken_key_lexemes_stay_unbuilt(deepseek_vocab):
    from deepinfer.constraints import GrammarCompiler

    names = [f"prop_unbuilt_{i}" for i in range(12)]  # unusual names: no shared cached lexeme
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names}}
    # warm_share=0: lazy building itself (a compile over 10 ms otherwise warms every lexeme)
    compiled = GrammarCompiler(deepseek_vocab, warm_share=0).compile_json_schema(schema)
    automaton = _cfg(compiled)
    m = Matcher(compiled)
    assert m.accept_string('{"prop_unbuilt_3": 1')
    m.allowed_token_ids()
    automaton.prepare_all()  # head entries only: builds no lexeme DFA
    keyed = [lx for lx, lit in zip(automaton.lexemes, automaton._literals) if b"prop_unbuilt_" in lit]
    built = [lx for lx in keyed if "trans" in lx.__dict__]
    assert keyed and len(built) < len(keyed)


def test_expr_literal_reads_leading_text():
    seq = ir.Seq((ir.Literal('"na'), ir.CharClass(((109, 109),)), ir.Literal('e":'),
                  ir.Repeat(ir.Literal(" "), 0, 1)))
    assert expr_literal(seq) == b'"name":'
    assert expr_literal(ir.Literal("x")) == b""                       # too short to help
    assert expr_literal(ir.Seq((ir.Repeat(ir.Literal("ab"), 1, 2),))) == b""


WS = [ir.Repeat(ir.Alt((ir.Literal("\n"), ir.Literal("\r\n"))), 0, 1),
      ir.Repeat(ir.CharClass(((9, 9), (32, 32))), 0, 20)]


@pytest.mark.parametrize("items", [
    [ir.Literal(",")] + WS + [ir.Literal('"name":')] + WS,
    [ir.Literal("{")] + WS + [ir.Literal('"a":')],
    [ir.Literal(",")] + WS + [ir.Literal('"x'), ir.Literal('y":')] + WS + [ir.Literal("[")],
])
def test_composed_dfa_equals_determinized(items):
    from deepinfer.constraints.cfg.heads import head_for, install_composed
    from deepinfer.constraints.cfg.lexeme import Lexeme
    from deepinfer.constraints.regular.dfa import Limits, determinize
    from deepinfer.constraints.regular.nfa import build_nfa

    expr = ir.Seq(tuple(items))
    head, literal = head_for(expr)
    lexeme = Lexeme(expr, None, Limits(), np.zeros(256, dtype=bool), False, {}, 10)
    assert install_composed(lexeme, literal, head)
    want = determinize(build_nfa(expr), Limits())
    assert same_language(lexeme.trans, lexeme.accepting, want.trans, want.accepting, s1=lexeme.start)
