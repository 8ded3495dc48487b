"""The nouns of the data flow: sampling parameters, requests, and their outputs.

Typed dataclasses shared by the engine, the sampler and the server. This module
knows nothing about tensors, models or the scheduler's policies; it validates
user input (`SamplingParams`) and raises `UserError` with the field's name.
"""

from __future__ import annotations

import enum
import json
import random
from dataclasses import dataclass, field
from typing import Any

from deepinfer.errors import UserError


class FinishReason(str, enum.Enum):
    STOP = "stop"      # eos, a stop string / token id, or the constraint is complete
    LENGTH = "length"  # max_tokens reached (or the model's context is full)
    ABORT = "abort"    # cancelled by the caller
    ERROR = "error"    # this request failed (e.g. its constraint did not compile); see .error


class RequestStatus(enum.Enum):
    WAITING_FOR_GRAMMAR = "waiting_for_grammar"  # constraint compiling in the thread pool
    WAITING = "waiting"                          # ready, not yet (or no longer) holding KV blocks
    RUNNING = "running"                          # holds KV blocks, scheduled every step
    FINISHED = "finished"


CONSTRAINT_FIELDS = ("json_schema", "regex", "grammar", "grammar_ir")


@dataclass
class SamplingParams:
    """How to sample one prompt's completion(s). Defaults follow the OpenAI API.

    At most one constraint: `json_schema` (dict or JSON text), `regex`,
    `grammar` (text in `grammar_syntax`: "lark" or "gbnf"), or `grammar_ir`: an
    `ir.Grammar` (e.g. built by `deepinfer.constraints.compose`), which the
    engine compiles with `GrammarCompiler.compile_ir`.
    `seed=None` draws a fresh seed per request; a fixed seed makes the output a
    pure function of (prompt, params) whatever else the engine is running.
    """

    n: int = 1
    max_tokens: int = 256
    min_tokens: int = 0
    temperature: float = 1.0
    top_k: int = 0                     # 0 or -1: off
    top_p: float = 1.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0    # >1 discourages tokens already in prompt or output
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    logit_bias: dict[int, float] | None = None
    seed: int | None = None
    stop: list[str] | str | None = None
    stop_token_ids: list[int] | None = None
    include_stop_str_in_output: bool = False
    ignore_eos: bool = False
    logprobs: int | None = None        # number of top alternatives per sampled token (0: only the sampled one)
    skip_special_tokens: bool = True
    json_schema: dict | str | None = None
    regex: str | None = None
    grammar: str | None = None
    grammar_syntax: str = "lark"
    grammar_ir: Any = None
    json_whitespace: str | None = None  # passed to the JSON Schema compiler when given

    def __post_init__(self) -> None:
        if isinstance(self.stop, str):
            self.stop = [self.stop]
        self.stop = list(self.stop or [])
        self.stop_token_ids = list(self.stop_token_ids or [])
        checks = [
            (self.n >= 1, "n must be >= 1"),
            (self.max_tokens >= 1, "max_tokens must be >= 1"),
            (0 <= self.min_tokens <= self.max_tokens, "min_tokens must be in [0, max_tokens]"),
            (self.temperature >= 0, "temperature must be >= 0"),
            (self.top_k >= -1, "top_k must be -1, 0 (off) or a positive count"),
            (0 < self.top_p <= 1, "top_p must be in (0, 1]"),
            (0 <= self.min_p <= 1, "min_p must be in [0, 1]"),
            (self.repetition_penalty > 0, "repetition_penalty must be > 0"),
            (-2 <= self.presence_penalty <= 2, "presence_penalty must be in [-2, 2]"),
            (-2 <= self.frequency_penalty <= 2, "frequency_penalty must be in [-2, 2]"),
            (self.logprobs is None or 0 <= self.logprobs <= 20, "logprobs must be in [0, 20]"),
            (self.grammar_syntax in ("lark", "gbnf"), "grammar_syntax must be 'lark' or 'gbnf'"),
            (all(isinstance(s, str) and s for s in self.stop), "stop must be non-empty strings"),
        ]
        for ok, message in checks:
            if not ok:
                raise UserError(f"SamplingParams: {message}")
        given = [name for name in CONSTRAINT_FIELDS if getattr(self, name) is not None]
        if len(given) > 1:
            raise UserError(f"SamplingParams: give at most one constraint, got {' and '.join(given)}")
        if isinstance(self.json_schema, str):
            try:
                self.json_schema = json.loads(self.json_schema)
            except json.JSONDecodeError as exc:
                raise UserError(f"SamplingParams: json_schema is not valid JSON: {exc}") from None
        grammar = self.grammar_ir
        if grammar is not None and not (hasattr(grammar, "rules") and hasattr(grammar, "start")):
            raise UserError("SamplingParams: grammar_ir must be an ir.Grammar (deepinfer.constraints.ir), "
                            f"not {type(grammar).__name__}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    @property
    def constraint(self) -> tuple[str, Any] | None:
        """(kind, spec) of the constraint, or None."""
        for kind in CONSTRAINT_FIELDS:
            if getattr(self, kind) is not None:
                return kind, getattr(self, kind)
        return None


@dataclass
class TokenLogprob:
    """The sampled token's log-probability and the top alternatives (after penalties, before the mask)."""

    token_id: int
    logprob: float
    top: dict[int, float] = field(default_factory=dict)


@dataclass
class CompletionOutput:
    """One of a prompt's n completions (full, or the newest delta when streaming)."""

    index: int
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    finish_reason: FinishReason | None = None
    error: str | None = None              # message when finish_reason is ERROR
    stop_reason: str | int | None = None  # the stop string or token id that ended it
    logprobs: list[TokenLogprob] | None = None

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass
class RequestOutput:
    """What a request produced: all its completions, plus timing in seconds."""

    request_id: str
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]
    finished: bool = False
    prompt: str | None = None
    num_cached_tokens: int = 0            # prompt tokens served from the prefix cache
    ttft: float | None = None             # arrival -> first token
    total_time: float | None = None       # arrival -> finish

    @property
    def text(self) -> str:
        return self.outputs[0].text

    @property
    def token_ids(self) -> list[int]:
        return self.outputs[0].token_ids

    @property
    def finish_reason(self) -> FinishReason | None:
        return self.outputs[0].finish_reason


def fresh_seed() -> int:
    """A random 63-bit seed for requests that did not fix one."""
    return random.getrandbits(63)


@dataclass
class Request:
    """One prompt submitted to the engine; fans out into `params.n` sequences (engine.sequence.Sequence)."""

    request_id: str
    prompt_token_ids: list[int]
    params: SamplingParams
    arrival_time: float
    prompt: str | None = None
    status: RequestStatus = RequestStatus.WAITING
    sequences: list[Any] = field(default_factory=list)
    compiled: Any = None                 # the CompiledConstraint, once compiled
    error: str | None = None
    first_token_time: float | None = None
    finish_time: float | None = None

    @property
    def is_finished(self) -> bool:
        return all(seq.finished for seq in self.sequences)
