"""Helpers shared by the context-free back end tests."""

from __future__ import annotations

from deepinfer.constraints import GrammarCompiler, Vocabulary
from deepinfer.constraints.cfg import CfgAutomaton, build_automaton
from deepinfer.constraints.compiler import CompiledConstraint


def cfg_compiled(compiler: GrammarCompiler, text: str | None = None, name: str | None = None):
    """Compiled with the context-free back end even when the grammar is regular."""
    compiled = compiler.compile_grammar(text, name=name)
    if isinstance(compiled.automaton, CfgAutomaton):
        return compiled
    automaton = build_automaton(compiled.grammar, compiler.vocab)
    return CompiledConstraint("grammar", compiled.grammar, automaton, compiler.vocab)


def brute_force_allowed(automaton, state, vocab: Vocabulary) -> set[int]:
    """Tokens whose bytes the automaton can step through, one by one (the definition)."""
    return {i for i, b in enumerate(vocab.token_bytes)
            if b and automaton.advance_bytes(state, b) is not None}


def assert_same_masks_along(fast, slow, token_ids: list[int], words: int) -> None:
    """Walk two automata over the same tokens; their masks must agree at every step, and both
    must accept at the end."""
    import numpy as np

    a, b = fast.initial_state(), slow.initial_state()
    row_a, row_b = np.zeros(words, dtype=np.int32), np.zeros(words, dtype=np.int32)
    for token in token_ids + [None]:
        fast.fill_mask(a, row_a)
        slow.fill_mask(b, row_b)
        assert np.array_equal(row_a, row_b)
        if token is None:
            break
        a, b = fast.next_state(a, token), slow.next_state(b, token)
        assert a is not None and b is not None
    assert fast.is_accepting(a) and slow.is_accepting(b)


def same_language(t1, a1, t2, a2, s1: int = 0, s2: int = 0) -> bool:
    """Product walk of two trimmed byte DFAs (trans [S, 256], -1 dead; accepting [S]) from their
    start states: same acceptance and the same live bytes everywhere."""
    import numpy as np

    seen, todo = {(s1, s2)}, [(s1, s2)]
    while todo:
        p, q = todo.pop()
        if a1[p] != a2[q] or not np.array_equal(t1[p] >= 0, t2[q] >= 0):
            return False
        for byte in np.flatnonzero(t1[p] >= 0).tolist():
            pair = (int(t1[p, byte]), int(t2[q, byte]))
            if pair not in seen:
                seen.add(pair)
                todo.append(pair)
    return True
