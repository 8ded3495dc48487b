"""Context-free back end on the real DeepSeek-V4 vocabulary: sentences, walks parsed by lark, exact masks."""

from __future__ import annotations

import random

import lark
import numpy as np
import pytest

from deepinfer.constraints import Matcher, Vocabulary, ir
from deepinfer.constraints.frontends.ebnf.library import available_grammars

from cfg_test_helpers import brute_force_allowed, cfg_compiled

# ------------------------------------------------------- DeepSeek-V4 vocabulary

class _LarkReference:
    """lark's Earley parser. Our language is "terminals expanded in place", which
    is lark's `dynamic_complete` lexer; plain `dynamic` tries only each terminal's
    greedy regex match and so rejects e.g. SQL's `ANDpANDz` (AND p AND z)."""

    def __init__(self, name: str) -> None:
        text = available_grammars()[name]["lark"].read_text()
        self.dynamic = lark.Lark(text, parser="earley", lexer="dynamic")
        self.complete = lark.Lark(text, parser="earley", lexer="dynamic_complete")

    def parse(self, text: str) -> None:
        try:
            self.dynamic.parse(text)
        except lark.exceptions.LarkError:
            self.complete.parse(text)


def _lark_parser(name: str) -> _LarkReference:
    return _LarkReference(name)


def random_sentence(grammar: ir.Grammar, rng: random.Random, budget: int = 60) -> str:
    """A random sentence of the grammar (long derivations cut short by taking the
    cheapest alternative once the budget is spent)."""
    cost = _min_lengths(grammar)
    out: list[str] = []

    def gen(expr, depth):
        over = len(out) > budget or depth > 40
        if isinstance(expr, ir.Literal):
            out.append(expr.text)
        elif isinstance(expr, ir.CharClass):
            lo, hi = rng.choice([r for r in expr.ranges if r[0] < 0x80] or expr.ranges)
            out.append(chr(rng.randint(lo, min(hi, lo + 200))))
        elif isinstance(expr, ir.Seq):
            for item in expr.items:
                gen(item, depth + 1)
        elif isinstance(expr, ir.Alt):
            options = [e for e in expr.items if _cost(e, cost) < 10**9]
            gen(min(options, key=lambda e: _cost(e, cost)) if over else rng.choice(options), depth + 1)
        elif isinstance(expr, ir.Repeat):
            hi = expr.min if over else min(expr.max if expr.max is not None else expr.min + 3, expr.min + 3)
            for _ in range(rng.randint(expr.min, hi)):
                gen(expr.item, depth + 1)
        elif isinstance(expr, ir.RuleRef):
            gen(grammar.rules[expr.name], depth + 1)

    gen(ir.RuleRef(grammar.start), 0)
    return "".join(out)


def _cost(expr, rules: dict) -> int:
    if isinstance(expr, ir.Literal):
        return len(expr.text)
    if isinstance(expr, ir.CharClass):
        return 1 if expr.ranges else 10**9
    if isinstance(expr, ir.Seq):
        return min(10**9, sum(_cost(e, rules) for e in expr.items))
    if isinstance(expr, ir.Alt):
        return min((_cost(e, rules) for e in expr.items), default=10**9)
    if isinstance(expr, ir.Repeat):
        return 0 if expr.min == 0 else min(10**9, expr.min * _cost(expr.item, rules))
    return rules.get(expr.name, 10**9)


def _min_lengths(grammar: ir.Grammar) -> dict[str, int]:
    rules = {name: 10**9 for name in grammar.rules}
    for _ in range(len(rules) + 1):
        for name, body in grammar.rules.items():
            rules[name] = min(rules[name], _cost(body, rules))
    return rules


def tokenize_randomly(m: Matcher, vocab: Vocabulary, text: bytes, rng: random.Random) -> list[int]:
    """Feed `text` with random allowed tokens that are prefixes of what is left."""
    by_bytes = _token_index(vocab)
    tokens = []
    while text:
        allowed = set(m.allowed_token_ids().tolist())
        fits = [i for n in range(1, min(len(text), 64) + 1)
                for i in by_bytes.get(text[:n], ()) if i in allowed]
        assert fits, f"no allowed token continues {text[:40]!r}"
        tok = rng.choice(fits)
        assert m.accept_token(tok)
        tokens.append(tok)
        text = text[len(vocab.token_bytes[tok]):]
    return tokens


_INDEX: dict[int, dict[bytes, list[int]]] = {}


def _token_index(vocab: Vocabulary) -> dict[bytes, list[int]]:
    if id(vocab) not in _INDEX:
        index: dict[bytes, list[int]] = {}
        for i, b in enumerate(vocab.token_bytes):
            if b:
                index.setdefault(b, []).append(i)
        _INDEX[id(vocab)] = index
    return _INDEX[id(vocab)]


@pytest.mark.parametrize("name", sorted(available_grammars()))
def test_deepseek_generated_sentences_are_accepted(deepseek_compiler, deepseek_vocab, name):
    """Random sentences of the IR, fed as random (non-canonical) token splits: every
    step's mask contains the next piece, the end is accepted, and lark agrees."""
    compiled = deepseek_compiler.compile_grammar(name=name)
    parser = _lark_parser(name)
    rng = random.Random(3)
    for _ in range(4):
        sentence = random_sentence(compiled.grammar, rng)
        parser.parse(sentence)
        m = Matcher(compiled)
        tokenize_randomly(m, deepseek_vocab, sentence.encode("utf-8"), rng)
        assert m.is_completed(), sentence


def test_deepseek_walk_outputs_parse_with_lark(deepseek_compiler, deepseek_vocab):
    """Free random walks over allowed tokens (biased to short tokens and to stopping):
    every output that reaches a complete sentence parses with lark."""
    short = np.array([i for i, b in enumerate(deepseek_vocab.token_bytes) if b and len(b) <= 2])
    finished = 0
    for name in sorted(available_grammars()):
        compiled = deepseek_compiler.compile_grammar(name=name)
        parser = _lark_parser(name)
        rng = random.Random(11)
        for _walk in range(4):
            m = Matcher(compiled)
            tokens: list[int] = []
            for _ in range(20):
                allowed = m.allowed_token_ids()
                if m.is_completed() and rng.random() < 0.5:
                    break
                pick = np.intersect1d(allowed, short) if rng.random() < 0.9 else allowed
                pick = [int(i) for i in (pick if len(pick) else allowed) if i not in deepseek_vocab.eos_ids]
                if not pick:
                    break
                tokens.append(rng.choice(pick))
                assert m.accept_token(tokens[-1])
            if m.is_completed():
                finished += 1
                parser.parse(deepseek_vocab.decode(tokens).decode("utf-8"))
    assert finished >= 4


DEEPSEEK_STATES = [("json", '{"name": "Ada", "tags": ["ma'), ("python", "def mean(values: li")]
DEEPSEEK_STATES_SLOW = [("sql", "SELECT a.b, COUNT(*) FROM t JOIN u ON t.id = u.id WHERE x > 1 AND y"),
                        ("arithmetic", "(1 + x) * -f(2, y"), ("json", '{"a": [1, 2.5e'),
                        ("python", 'def f(x):\n    if x == "a\\'), ("csv", 'a,b\n"x,')]


def _check_definition_on_deepseek(compiler, vocab, name, prefix):
    compiled = cfg_compiled(compiler, name=name)
    m = Matcher(compiled)
    assert m.accept_string(prefix)
    state = m._stack[-1]
    expected = brute_force_allowed(compiled.automaton, state, vocab)
    assert set(m.allowed_token_ids().tolist()) - set(vocab.eos_ids) == expected


@pytest.mark.parametrize("name, prefix", DEEPSEEK_STATES)
def test_deepseek_masks_equal_byte_by_byte_definition(deepseek_compiler, deepseek_vocab, name, prefix):
    """The vectorized runs (loop shortcuts, offset groups, follow filter) against the
    definition, token by token, over the whole DeepSeek-V4 vocabulary."""
    _check_definition_on_deepseek(deepseek_compiler, deepseek_vocab, name, prefix)


@pytest.mark.slow
@pytest.mark.parametrize("name, prefix", DEEPSEEK_STATES_SLOW)
def test_deepseek_masks_equal_byte_by_byte_definition_more(deepseek_compiler, deepseek_vocab, name, prefix):
    _check_definition_on_deepseek(deepseek_compiler, deepseek_vocab, name, prefix)
