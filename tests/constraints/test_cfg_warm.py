"""Warming the context-free back end ahead of use: precompute_masks and the compiler's policy."""

from __future__ import annotations

import random

import numpy as np
import pytest

from deepinfer.constraints import GrammarCompiler, Matcher, Vocabulary
from deepinfer.constraints import compiler as compiler_module
from deepinfer.constraints.cfg import CfgAutomaton

from cfg_test_helpers import brute_force_allowed

GRAMMAR = r"""
start: obj
obj: "{" (pair ("," pair)*)? "}"
pair: KEY ":" value
value: obj | NUMBER | STRING | "[" (value ("," value)*)? "]"
KEY: /"w[a-z]{1,3}"/
NUMBER: /-?(0|[1-9][0-9]{0,4})(\.[0-9]{1,3})?/
STRING: /"[a-z ]{0,6}"/
"""

TOKENS = ['{"', '":', '",', '"}', '},', '],', '[{', '12', '3.', '.5', '-1', 'wa', 'wab', ' a', 'ab', '""', '[]',
          '{}', '"w', 'w', ':[', ':{', '"]']


def _vocab() -> Vocabulary:
    tokens: list[bytes | None] = [bytes([b]) for b in range(256)]
    tokens += [t.encode() for t in TOKENS]
    tokens.append(None)
    return Vocabulary.from_token_bytes(tokens, eos_ids=[len(tokens) - 1])


def _compiled(vocab: Vocabulary, **options):
    compiled = GrammarCompiler(vocab, **options).compile_grammar(GRAMMAR)
    assert isinstance(compiled.automaton, CfgAutomaton)
    return compiled


def test_precompute_builds_every_lexeme_and_its_start_run():
    compiled = _compiled(_vocab(), warm_share=0)
    automaton = compiled.automaton
    assert automaton.precompute_masks(budget_s=30.0) == len(automaton.lexemes)
    for lexeme in automaton.lexemes:
        assert "trans" in lexeme.__dict__  # built, not waiting for a token step
    runs = automaton._scan_context()[0].runs
    count = len(runs)
    automaton.precompute_masks(budget_s=30.0)  # a second call finds everything cached
    assert len(runs) == count


def test_precompute_stops_at_its_budget():
    automaton = _compiled(_vocab(), warm_share=0).automaton
    assert automaton.precompute_masks(budget_s=-1.0) == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_warm_masks_equal_cold_masks_and_the_definition(seed):
    """A warmed automaton (its own vocabulary, so no cache is shared) gives the same masks
    as a cold one on random walks, and both equal the brute-force definition."""
    warm_vocab, cold_vocab = _vocab(), _vocab()
    warm, cold = _compiled(warm_vocab, warm_share=0), _compiled(cold_vocab, warm_share=0)
    warm.precompute_masks(budget_s=30.0)
    m_warm, m_cold = Matcher(warm), Matcher(cold)
    rng = random.Random(seed)
    for _ in range(40):
        allowed = m_warm.allowed_token_ids()
        assert np.array_equal(allowed, m_cold.allowed_token_ids())
        expected = brute_force_allowed(warm.automaton, m_warm.state, warm_vocab)
        assert set(int(i) for i in allowed) - set(warm_vocab.eos_ids) == expected
        choices = sorted(expected)
        if not choices:
            break
        token = rng.choice(choices)
        assert m_warm.accept_token(token) and m_cold.accept_token(token)


@pytest.mark.parametrize("after_s, share, warmed", [
    (0.0, 1.0, True),      # every compile counts as slow: warmed
    (3600.0, 1.0, False),  # no compile takes an hour: never warmed
    (0.0, 0.0, False),     # warm_share 0 turns it off
])
def test_compiler_warms_compiles_slower_than_its_threshold(monkeypatch, after_s, share, warmed):
    calls = []
    monkeypatch.setattr(compiler_module.CompiledConstraint, "precompute_masks",
                        lambda self, budget_s=0.05: calls.append(budget_s))
    _compiled(_vocab(), warm_after_s=after_s, warm_share=share)  # 5 lexemes: small
    assert bool(calls) == warmed
    if warmed:
        assert calls[0] > 0  # a budget of `share` times the compile's own time


def test_precompute_covers_tokens_ending_inside_a_property_name():
    """A name read in pieces (`"alp` `ha"`) leaves threads in key heads and inside key literals;
    after precompute_masks their lookups are cached: the masks there add no literal entries."""
    schema = {"type": "object", "properties": {
        "alpha": {"type": "integer"}, "alpine": {"type": "string"}, "beta": {"type": "boolean"},
        "child": {"$ref": "#"}}}
    vocab = _vocab()
    compiled = GrammarCompiler(vocab, warm_share=0).compile_json_schema(schema)
    automaton = compiled.automaton
    assert isinstance(automaton, CfgAutomaton)
    assert automaton.precompute_masks(budget_s=30.0) == len(automaton.lexemes)
    scans = automaton._scan_context()[0]
    sizes = (len(scans.head_literals), len(scans.literal_roots))
    m = Matcher(compiled)
    for byte in b'{"alpha": 1, "bet':
        m.allowed_token_ids()
        assert m.accept_token(byte)
        assert (len(scans.head_literals), len(scans.literal_roots)) == sizes, bytes([byte])


def test_compiler_warms_grammars_of_many_lexemes_however_fast(monkeypatch):
    calls = []
    monkeypatch.setattr(compiler_module.CompiledConstraint, "precompute_masks",
                        lambda self, budget_s=0.05: calls.append(budget_s))
    names = [f"w{chr(97 + i)}{chr(97 + j)}" for i in range(6) for j in range(6)]
    rules = "start: obj\nobj: \"{\" (pair (\",\" pair)*)? \"}\"\npair: " + " | ".join(
        f'"\\"{n}\\":" value' for n in names) + "\nvalue: obj | NUMBER\nNUMBER: /[0-9]+/\n"
    compiled = GrammarCompiler(_vocab(), warm_after_s=3600.0).compile_grammar(rules)
    assert len(compiled.automaton.lexemes) > compiler_module.WARM_MIN_LEXEMES
    assert calls
