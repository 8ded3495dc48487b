"""The context-free back end: recursive grammars -> an exact token automaton.

`build_automaton(grammar, vocab, limits)` is the entry point the compiler
calls for recursive IR grammars (EBNF front ends, recursive JSON Schemas).
The grammar is split into lexemes with byte DFAs and a BNF (lexemes.py),
parsed with Earley (earley.py), and masked by cached vectorized token runs
(scan.py) driven by the automaton (automaton.py). Never imports torch.
"""

from __future__ import annotations

from .. import ir
from ..regular.dfa import Limits
from ..vocab import Vocabulary
from .automaton import CfgAutomaton
from .lexemes import split_grammar
from .threads import CfgState

__all__ = ["build_automaton", "CfgAutomaton", "CfgState"]


def build_automaton(grammar: ir.Grammar, vocab: Vocabulary, limits: Limits | None = None) -> CfgAutomaton:
    return CfgAutomaton(split_grammar(grammar, limits), vocab)
