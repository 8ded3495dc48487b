"""ir_facts agrees exactly with the NFA (nullable, non-empty, first bytes, state count), and a
lexeme built lazily from the IR has the same DFA as one built from an NFA up front."""

import numpy as np
import pytest

from deepinfer.constraints import ir
from deepinfer.constraints.cfg.lexeme import Lexeme, analyze
from deepinfer.constraints.cfg.recursion import nonregular_rules
from deepinfer.constraints.regular.dfa import Limits
from deepinfer.constraints.frontends.json.schema import lower_json_schema
from deepinfer.constraints.frontends.regex import parse_regex
from deepinfer.constraints.regular.facts import FactsCache
from deepinfer.constraints.regular.nfa import build_nfa

SCHEMAS = [
    {"type": "object", "properties": {"név": {"type": "string", "pattern": "^[a-zé]{2,5}$"},
                                      "n": {"type": "integer", "minimum": -5, "maximum": 300}},
     "required": ["n"]},
    {"type": "array", "items": {"enum": ["", "a", 1.5, None, {"k": []}]}, "minItems": 0, "maxItems": 2},
    {"anyOf": [{"type": "string", "format": "date"}, {"type": "number", "exclusiveMinimum": 0}]},
]
REGEXES = [r"a*", r"(ab|)c?", r"[^\x00-\x7f]+", r"x{0}", r"(\d{2,3}|é)?[-+]", r"[\u0800-\uffff]{1,2}"]


def _pieces():
    for schema in SCHEMAS:
        grammar = lower_json_schema(schema)
        nonregular = nonregular_rules(grammar)
        rules = {n: b for n, b in grammar.rules.items() if n not in nonregular}
        for body in rules.values():
            for sub in list(ir.walk_unique(body))[:150]:
                yield rules, sub
    for pattern in REGEXES:
        yield {}, parse_regex(pattern)
    yield {}, ir.NOTHING
    yield {}, ir.seq(ir.literal("a"), ir.NOTHING)
    yield {}, ir.Repeat(ir.NOTHING, 0, 3)


def test_facts_match_the_nfa():
    checked = 0
    for rules, expr in _pieces():
        facts = FactsCache(rules).of(expr)
        try:
            nfa = build_nfa(ir.Grammar({**rules, "__x__": expr}, "__x__"))
        except Exception:  # noqa: BLE001 - e.g. recursive references: not a lexeme
            continue
        nullable, nonempty, first = analyze(nfa)
        assert (facts.nullable, facts.nonempty) == (nullable, nonempty), ir.to_ebnf(expr)
        assert np.array_equal(facts.first_bytes(), first), ir.to_ebnf(expr)
        assert facts.states == len(nfa.eps), ir.to_ebnf(expr)
        assert facts.empty == (not nullable and not nonempty)
        checked += 1
    assert checked > 100


@pytest.mark.parametrize("pattern", REGEXES[:3] + [r"(\d{2,3}|é)?[-+]"])
def test_lazy_lexeme_equals_eager(pattern):
    expr = parse_regex(pattern)
    facts = FactsCache({}).of(expr)
    lazy = Lexeme(expr, None, Limits(), facts.first_bytes(), facts.nullable, rules={}, size_hint=facts.states)
    assert "trans" not in lazy.__dict__  # nothing built yet
    nfa = build_nfa(expr)
    eager = Lexeme(expr, nfa, Limits(), analyze(nfa)[2], facts.nullable)
    eager.build()
    assert lazy.digest == eager.digest and lazy.start == eager.start
    assert np.array_equal(lazy.trans, eager.trans)


def test_class_facts_match_the_nfa_mixed_ranges():
    """Classes mixing one-byte ranges (ir_facts' fast path) with multi-byte ones."""
    import random

    rng = random.Random(7)
    for _ in range(60):
        spans = []
        for _ in range(rng.randint(1, 5)):
            top = rng.choice([0x7F, 0x7FF, 0xFFFF, 0x10FFFF])
            lo = rng.randint(0, top)
            spans.append((lo, min(top, lo + rng.choice([0, 5, 90, 3000]))))
        cls = ir.CharClass.of(spans)
        facts = FactsCache({}).of(cls)
        nullable, nonempty, first = analyze(build_nfa(cls))
        assert np.array_equal(facts.first_bytes(), first), spans
        assert facts.states == len(build_nfa(cls).eps), spans
