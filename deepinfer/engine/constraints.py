"""Constraint compilation off the step loop: a thread pool over the GrammarCompiler.

A request with a constraint waits (WAITING_FOR_GRAMMAR) while its constraint
compiles; the step loop only polls finished futures, so other requests keep
running. A compile error becomes that request's error message, and what the failed compile
built is given back (deepinfer/memory.py).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from deepinfer.constraints import GENERATION_JSON_OPTIONS, GrammarCompiler, Vocabulary, check_budget
from deepinfer.memory import forget_frames, give_back
from deepinfer.types import SamplingParams


class ConstraintService:
    def __init__(self, tokenizer, vocab_size: int, max_workers: int = 1) -> None:
        self._tokenizer = tokenizer
        self._vocab_size = vocab_size
        self._compiler: GrammarCompiler | None = None
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="deepinfer-compile")
        self.compile_seconds = 0.0
        self.num_compiled = 0
        self.num_errors = 0

    @property
    def compiler(self) -> GrammarCompiler:
        """Built on first use: the vocabulary scan costs time a model without constraints never pays."""
        with self._lock:  # the server thread and the compile pool may both ask first
            if self._compiler is None:
                vocab = Vocabulary.from_tokenizer(self._tokenizer.backend, vocab_size=self._vocab_size,
                                                  eos_ids=self._tokenizer.eos_token_ids)
                self._compiler = GrammarCompiler(vocab, json_options=GENERATION_JSON_OPTIONS)
            return self._compiler

    def submit(self, params: SamplingParams) -> Future:
        return self._pool.submit(self._compile, params)

    def _compile(self, params: SamplingParams):
        """The request's compiled constraint; a max_tokens too small for any complete output is
        refused like a bad constraint (ConstraintError), before generation."""
        compiled = self._compile_constraint(params)
        check_budget(compiled, params.max_tokens)
        return compiled

    def _compile_constraint(self, params: SamplingParams):
        start = time.perf_counter()
        try:
            kind, spec = params.constraint
            if kind == "json_schema":
                options = {} if params.json_whitespace is None else {"whitespace": params.json_whitespace}
                return self.compiler.compile_json_schema(spec, **options)
            if kind == "regex":
                return self.compiler.compile_regex(spec)
            if kind == "grammar_ir":
                return self.compiler.compile_ir(spec)
            return self.compiler.compile_grammar(spec, syntax=params.grammar_syntax)
        except Exception as exc:
            self.num_errors += 1
            forget_frames(exc)  # the failed build lives on in its frames: drop it, give it back
            give_back()
            raise
        finally:
            self.compile_seconds += time.perf_counter() - start
            self.num_compiled += 1

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
