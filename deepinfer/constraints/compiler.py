"""GrammarCompiler: constraint text -> CompiledConstraint, with an LRU cache.

Owns dispatch from each constraint kind to its front end (regex, JSON Schema, EBNF)
and the compile around it: caching, the bounded warm-up of big grammars, the GC
pauses. Which back end builds the IR is backends.py's: non-recursive grammars are
inlined into one DFA (regular back end), recursive ones go to the context-free back
end `deepinfer.constraints.cfg`; a JSON Schema's two lowerings and trackers are
built there too. Knows nothing about the engine.
"""

from __future__ import annotations

import copy
import json
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from . import deadline, ir
from .automaton import TokenAutomaton
from .backends import build_automaton, build_schema
from .deadline import Deadline, DeadlineExceeded
from .errors import ConstraintError
from .frontends.ebnf import lower_grammar
from .frontends.json.distinct import distinct_items  # noqa: F401 - re-exported by the package
from .frontends.json.lowered import lower_for_compiler
from .frontends.json.schema import pydantic_schema
from .frontends.regex import lower_regex
from .regular.dfa import Limits, determinize_expr
from .regular.gcpause import freeze_abandoned, freeze_survivors, gc_paused
from .vocab import Vocabulary


WARM_AFTER_S = 0.010  # compiles at least this long are followed by a bounded warm-up (_warm)
WARM_SHARE = 1.0      # ... of up to this share of their compile time
WARM_MAX_S = 2.0      # ... and never longer than this (a schema's whole budget is often ~30 s)
WARM_MIN_LEXEMES = 24  # ... and so are context-free grammars with more lexemes, however fast

# JSON Schema options for generation (the engine's compiler, hence the server, the LLM API and the
# CLI): an unknown `format` is refused rather than read as an annotation, and numbers hold at most
# 17 integer and 17 fraction digits (a run of digits cannot fill the token budget). A bare
# GrammarCompiler keeps JSON Schema's own reading (unbounded numbers, unknown formats as
# annotations): what MaskBench measures and benchmarks/mask_hash.py fingerprints.
GENERATION_JSON_OPTIONS = {"unknown_formats": "refuse", "number_digits": 17}


@dataclass
class CompiledConstraint:
    """A constraint compiled against one Vocabulary; shared by many Matchers."""

    kind: str                      # "regex" | "json_schema" | "grammar" | "ir"
    grammar: ir.Grammar
    automaton: TokenAutomaton
    vocab: Vocabulary
    stats: dict[str, Any] = field(default_factory=dict)
    completions: Any = field(default=None, repr=False)  # completion.Completions, made on first use

    def precompute_masks(self, budget_s: float = 0.05) -> None:
        """Spend up to `budget_s` computing masks ahead of use (no-op for back
        ends without it); masks are otherwise computed lazily on first use."""
        precompute = getattr(self.automaton, "precompute_masks", None)
        if precompute is not None:
            precompute(budget_s)

    @property
    def annotations(self) -> list[str]:
        """What the front end accepted without enforcing (e.g. unknown formats)."""
        return self.grammar.annotations


class GrammarCompiler:
    """Compiles constraints for one vocabulary (one per model); thread safe."""

    def __init__(self, vocab: Vocabulary, *, limits: Limits | None = None,
                 cache_size: int = 256, warm_share: float = WARM_SHARE,
                 warm_after_s: float = WARM_AFTER_S, json_options: dict | None = None) -> None:
        """json_options: defaults for every compile_json_schema call (a call's own options win),
        e.g. GENERATION_JSON_OPTIONS. warm_share, warm_after_s: a compile that took over `warm_after_s` seconds, or of a
        context-free grammar of over WARM_MIN_LEXEMES lexemes, then spends up to `warm_share`
        times as long (at most WARM_MAX_S) on `precompute_masks`; 0 turns it off."""
        self.vocab = vocab
        self.limits = limits or Limits()
        self.cache_size = cache_size
        self.warm_share, self.warm_after_s = warm_share, warm_after_s
        self.json_options = dict(json_options or {})
        self._cache: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    # --------------------------------------------------------------- caching
    def _cached(self, key, build):
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        limit = self._deadline(key[0])
        stopped = None
        with gc_paused():
            started = time.perf_counter()
            with deadline.scope(limit):
                try:
                    compiled = build()
                    if limit is not None:
                        limit.check()  # a limit met inside a fallback that was then left is still met
                except DeadlineExceeded as exc:
                    exc.__traceback__ = None  # the stopped compile's frames: its IR is garbage now
                    stopped = exc.deadline.error()
                    freeze_abandoned()
            if stopped is None:
                self._warm(compiled, time.perf_counter() - started, limit)
        if stopped is not None:
            raise stopped
        # the compiled automaton is long-lived: out of full GC passes
        freeze_survivors(None if limit is None else limit.left())
        with self._lock:
            self._cache[key] = compiled
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return compiled

    def _deadline(self, kind: str) -> Deadline | None:
        """This compile's Deadline when the Limits set a compile time, state or memory limit."""
        limits = self.limits
        if (limits.compile_time_s, limits.max_compile_states, limits.max_compile_bytes) == (None, None, None):
            return None
        label = {"json_schema": "JSON Schema", "ir": "grammar"}.get(kind, kind)
        return Deadline(limits.compile_time_s, limits.max_compile_states, limits.limit_option, label,
                        max_bytes=limits.max_compile_bytes, memory_option=limits.memory_option)

    def with_limits(self, limits: Limits) -> "GrammarCompiler":
        """This compiler with other Limits: the same vocabulary, options, cache and lock (a
        constraint either compiles is a cache hit for both), its own limits. What a server
        compiles under its admission limits without changing the limits of the engine's (or a
        library user's LLM's) compiler it was given."""
        view = copy.copy(self)  # shallow: _cache and _lock are shared objects, not copies
        view.limits = limits
        return view

    def _warm(self, compiled: CompiledConstraint, spent_s: float, limit: Deadline | None = None) -> None:
        """Precompute what token steps would build on first use, for big grammars only:
        a compile over WARM_AFTER_S, or a context-free grammar of over WARM_MIN_LEXEMES
        lexemes (the same choice on a fast or a loaded machine, for most schemas).

        Why: in such grammars the lexemes a token step builds on first use (0.3-3 ms each)
        made most of the slowest steps on MaskBench; spending up to as long again at compile
        time takes them out of the steps. A small grammar's compile is kept short: its first
        mask is what an interactive user waits on."""
        big = spent_s >= self.warm_after_s or _lexeme_count(compiled.automaton) > WARM_MIN_LEXEMES
        if self.warm_share > 0 and big:
            budget = min(spent_s * self.warm_share, WARM_MAX_S)
            left = None if limit is None else limit.left()
            if left is not None:  # within the compile's time limit, with room for one lexeme's overrun
                budget = min(budget, 0.5 * left)
            compiled.precompute_masks(budget_s=budget)

    # ----------------------------------------------------------- front doors
    def compile_regex(self, pattern: str) -> CompiledConstraint:
        return self._cached(("regex", pattern, ()),
                            lambda: self._compile("regex", lambda: lower_regex(pattern)))

    def compile_ir(self, grammar: ir.Grammar, kind: str = "ir") -> CompiledConstraint:
        """The generic back-end entry: regular -> DFA, recursive -> context-free back end."""
        key = ("ir", str(grammar), grammar.start, tuple(grammar.annotations))
        lone = ir.first_surrogate(key[1])  # printed grammars hold raw characters only in literals
        if lone is not None:  # a literal no UTF-8 text holds (front ends reject them with a location)
            raise ConstraintError(f"grammar literal holds U+{ord(lone):04X}, not a Unicode scalar value")
        return self._cached(key, lambda: self._compile(kind, lambda: grammar))

    def compile_json_schema(self, schema, **options) -> CompiledConstraint:
        """JSON Schema (dict, JSON text or Pydantic model class); options go to the
        front end (`whitespace=...`, `strict=...`, `unknown_formats=...`, `number_digits=...`),
        over the compiler's `json_options`."""
        options = {**self.json_options, **options}
        opts = tuple(sorted((k, repr(v)) for k, v in options.items()))
        return self._cached(("json_schema", _schema_key(schema), opts),
                            lambda: self._compile_schema(schema, options))

    def compile_grammar(self, text: str | None = None, syntax: str = "lark",
                        start: str | None = None, name: str | None = None) -> CompiledConstraint:
        """An EBNF grammar (lark or GBNF syntax), or a shipped grammar by `name`."""
        key = ("grammar", text, (syntax, start, name))
        return self._cached(key, lambda: self._compile(
            "grammar", lambda: lower_grammar(text, syntax, start, name)))

    # -------------------------------------------------------------- back end
    def _compile(self, kind: str, lower) -> CompiledConstraint:
        t0 = time.perf_counter()
        grammar = lower()
        t1 = time.perf_counter()
        deadline.set_stage("building its automaton")
        automaton = self.build_automaton(grammar)
        t2 = time.perf_counter()
        stats = {"lower_s": t1 - t0, "build_s": t2 - t1}
        dfa = getattr(automaton, "dfa", None)
        if dfa is not None:
            stats["dfa_states"] = dfa.num_states
        return CompiledConstraint(kind, grammar, automaton, self.vocab, stats)

    def _compile_schema(self, schema, options: dict) -> CompiledConstraint:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20_000))  # back ends walk expression trees recursively
        try:
            lowered = lower_for_compiler(schema, **options)
            automaton, stats = build_schema(lowered, self.vocab, self.limits)
        except RecursionError:
            raise ConstraintError("JSON Schema nests too deeply to compile") from None
        finally:
            sys.setrecursionlimit(limit)
        return CompiledConstraint("json_schema", lowered.grammar, automaton, self.vocab, stats)

    def build_automaton(self, grammar: ir.Grammar) -> TokenAutomaton:
        """IR -> TokenAutomaton (no caching; backends.build_automaton)."""
        return build_automaton(grammar, self.vocab, self.limits)

    def build_dfa(self, grammar_or_expr):
        """A regular grammar (or one IR expression) -> minimized byte DFA."""
        return determinize_expr(grammar_or_expr, self.limits)


def _lexeme_count(automaton) -> int:
    """Lexemes of a context-free automaton (through tracked wrappers' `inner`), else 0."""
    while automaton is not None and not hasattr(automaton, "lexemes"):
        automaton = getattr(automaton, "inner", None)
    return 0 if automaton is None else len(automaton.lexemes)


def _schema_key(schema) -> str:
    if isinstance(schema, str):
        return schema
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        return f"pydantic:{schema.__module__}.{schema.__qualname__}:" + json.dumps(
            pydantic_schema(schema), sort_keys=True)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))  # as deep as the front end lowers
    try:
        return json.dumps(schema, sort_keys=True)
    except RecursionError:
        raise ConstraintError("JSON Schema nests too deeply to compile") from None
    except (TypeError, ValueError) as exc:
        raise ConstraintError(f"JSON Schema must be a dict, JSON text or Pydantic model: {exc}") from exc
    finally:
        sys.setrecursionlimit(limit)
