"""A small stand-in for AsyncEngine, for server tests that must not depend on model speed.

It walks the real constraint `Matcher` with seeded random choices among the
allowed tokens, so constrained outputs are genuinely enforced by the project's
compiler; unconstrained requests draw random text tokens. Same request +
seed -> same output. Used only where the real AsyncEngine is not the subject.
"""

from __future__ import annotations

import asyncio
import random

from deepinfer.constraints import Matcher
from deepinfer.types import CompletionOutput, FinishReason, RequestOutput, TokenLogprob


class FakeAsyncEngine:
    def __init__(self, tokenizer, compiler, delay: float = 0.0) -> None:
        self.tokenizer = tokenizer
        self.compiler = compiler
        self.delay = delay
        self.aborted: set[str] = set()
        self.active: set[str] = set()
        self.requests: list = []  # (request_id, params) seen, for assertions

    def stats(self) -> dict:
        return {"num_waiting": 0, "num_running": len(self.active), "kv_usage": 0.25,
                "prefix_cache_hit_rate": 0.5}

    def abort(self, request_id: str) -> None:
        self.aborted.add(request_id)

    def _matcher(self, params):
        c = params.constraint
        if c is None:
            return None
        kind, value = c
        if kind == "json_schema":
            return Matcher(self.compiler.compile_json_schema(value))
        if kind == "regex":
            return Matcher(self.compiler.compile_regex(value))
        return Matcher(self.compiler.compile_grammar(value, syntax=params.grammar_syntax))

    def _allowed(self, matcher) -> list[int]:
        import torch
        from deepinfer.constraints import allocate_token_bitmask
        vocab = self.compiler.vocab
        mask = allocate_token_bitmask(1, vocab.size)
        matcher.fill_next_token_bitmask(mask, 0)
        bits = [(int(mask[0, i // 32]) >> (i % 32)) & 1 for i in range(vocab.size)]
        del torch
        return [i for i, b in enumerate(bits) if b]

    async def add_request(self, prompt=None, params=None, request_id=None, prompt_token_ids=None):
        self.requests.append((request_id, params))
        self.active.add(request_id)
        rng = random.Random(params.seed if params.seed is not None else random.getrandbits(32))
        matcher = self._matcher(params)
        eos = min(self.tokenizer.eos_token_ids)
        text_ids = [i for i in range(3, self.tokenizer.vocab_size)]
        produced, text = [], ""
        try:
            for step in range(params.max_tokens):
                await asyncio.sleep(self.delay)
                if request_id in self.aborted:
                    yield self._out(request_id, "", [], FinishReason.ABORT)
                    return
                if matcher is not None:
                    allowed = self._allowed(matcher)
                    # prefer finishing once possible, so outputs stay short
                    token = eos if eos in allowed and rng.random() < 0.5 else rng.choice(allowed)
                    matcher.accept_token(token)
                    if token in self.tokenizer.eos_token_ids or matcher.is_terminated():
                        yield self._out(request_id, "", [], FinishReason.STOP)
                        return
                else:
                    token = rng.choice(text_ids)
                produced.append(token)
                new_text = self.tokenizer.decode(produced)
                delta, text = new_text[len(text):], new_text
                lps = None
                if params.logprobs is not None:
                    lps = [TokenLogprob(token, -0.5, {token: -0.5, 3: -1.5}
                                        if params.logprobs else {})]
                for s in params.stop:
                    if s in text:
                        yield self._out(request_id, delta[:max(0, len(delta) - len(text) + text.index(s))],
                                        [token], FinishReason.STOP, s, lps)
                        return
                yield self._out(request_id, delta, [token], None, None, lps)
            yield self._out(request_id, "", [], FinishReason.LENGTH)
        finally:
            self.active.discard(request_id)

    @staticmethod
    def _out(rid, text, ids, finish, stop=None, lps=None):
        return RequestOutput(request_id=rid, prompt_token_ids=[], finished=finish is not None,
                             outputs=[CompletionOutput(0, text, ids, finish, None, stop, lps)])
