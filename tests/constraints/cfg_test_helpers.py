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
