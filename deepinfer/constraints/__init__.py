"""The constraint compiler: regex, JSON Schema and EBNF to token-level masks.

Front ends lower text into one grammar IR (`ir.py`); the back end compiles it
against a tokenizer's vocabulary into per-state token masks; a per-request
`Matcher` walks them. Never imports the engine, model or server; only
`bitmask.py` touches torch (imported lazily here, so the compiler works without it).

    vocab = Vocabulary.from_tokenizer_json(path)
    compiler = GrammarCompiler(vocab)
    m = Matcher(compiler.compile_regex(r"[0-9]{4}-[0-9]{2}"))
    bitmask = allocate_token_bitmask(1, vocab.size)
    m.fill_next_token_bitmask(bitmask, 0); m.accept_token(token_id)
"""

from .automaton import TokenAutomaton
from .completion import check_budget, needed_tokens
from .compiler import GENERATION_JSON_OPTIONS, CompiledConstraint, GrammarCompiler, distinct_items
from .regular.dfa import Limits
from .errors import ConstraintError
from .matcher import Matcher, fill_next_token_bitmask
from .vocab import Vocabulary

__all__ = [
    "GENERATION_JSON_OPTIONS", "CompiledConstraint", "ConstraintError", "GrammarCompiler", "Limits", "Matcher",
    "TokenAutomaton", "Vocabulary", "check_budget", "distinct_items", "needed_tokens", "allocate_token_bitmask", "apply_token_bitmask_inplace",
    "fill_next_token_bitmask",
]


def __getattr__(name):  # torch-dependent helpers, imported on first use
    if name in ("allocate_token_bitmask", "apply_token_bitmask_inplace", "unpack_bitmask"):
        from . import bitmask
        return getattr(bitmask, name)
    raise AttributeError(f"module 'deepinfer.constraints' has no attribute {name!r}")
