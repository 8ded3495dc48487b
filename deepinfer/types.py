"""The nouns of the data flow: sampling parameters, requests, and their outputs.

Typed dataclasses shared by the engine, the sampler and the server: what one
prompt asks of the engine (`SamplingParams`, `Request`) and what it produced
(`RequestOutput`), and what one API request asks of the server (`Job`, with its
`ConstraintSpec` and `ToolDecl`s) and what its choices produced (`ChoiceDelta`,
`ChoiceResult`, `Usage`). This module knows nothing about tensors, models, HTTP
or the scheduler's policies; it validates user input (`SamplingParams`) and
raises `UserError` with the field's name.
"""

from __future__ import annotations

import enum
import json
import random
from dataclasses import dataclass, field
from typing import Any, Literal

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
    queue_time: float | None = None       # arrival -> first scheduled (its constraint compiled by then)
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
    """A random seed for requests that did not fix one: 43 bits, so that each of n completions'
    derived seed (sampling.derive_seed: seed * 1000003 + index) fits int64 too."""
    return random.getrandbits(43)


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
    first_scheduled_time: float | None = None
    first_token_time: float | None = None
    finish_time: float | None = None

    @property
    def is_finished(self) -> bool:
        return all(seq.finished for seq in self.sequences)


# ------------------------------------------------ a client's request, as the server runs it
# One API request becomes a Job: a prompt, n choices (each its own engine Request, seed + i),
# at most one constraint, and the tools the model may call. Protocol translators build it; the
# runner streams each choice's ChoiceDeltas; formatters read the finished ChoiceResults.

ConstraintKind = Literal["json_schema", "regex", "grammar", "ir"]
ToolMode = Literal["none", "auto", "forced"]


@dataclass(frozen=True)
class ConstraintSpec:
    """What to compile: a JSON Schema (dict), a regex, a grammar text, or an `ir.Grammar`
    composed by `deepinfer.constraints.compose` (kind "ir")."""

    kind: ConstraintKind
    value: Any
    source: str  # the request field that asked for it, for error messages
    syntax: str = "lark"  # grammars only: "lark" or "gbnf"
    strict: bool = False  # JSON Schema only: OpenAI-style strict mode requested


@dataclass(frozen=True)
class ToolDecl:
    """A function tool, whatever protocol declared it."""

    name: str
    description: str | None
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    strict: bool = False
    source: str | None = None  # the request field of its parameters schema, for error messages


@dataclass
class Job:
    """One client request: a prompt, `params.n` choices, at most one constraint, tools."""

    prompt_token_ids: list[int]
    prompt_text: str
    params: SamplingParams  # as the client set them; each choice runs with n=1 and seed + i
    constraint: ConstraintSpec | None = None
    tool_mode: ToolMode = "none"
    tools: list[ToolDecl] = field(default_factory=list)
    parallel_tool_calls: bool = True  # several calls in one turn (OpenAI's default); False: at most one
    reasoning_aware: bool = False  # free thinking until `reasoning_end`, then the constrained answer
    reasoning_end: str = "</think>"

    @property
    def n(self) -> int:
        return self.params.n


@dataclass
class DecodedLogprob:
    """A sampled token's log-probability and its top alternatives, with their texts and exact
    bytes (a token may end mid-character): what the API routes report."""

    token: str
    token_id: int
    logprob: float
    top: list[tuple[str, int, float]] = field(default_factory=list)  # (token, id, logprob)
    bytes: list[int] | None = None
    top_bytes: list[list[int] | None] = field(default_factory=list)


@dataclass
class ChoiceDelta:
    """New output of one choice since the previous delta."""

    index: int
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[DecodedLogprob] = field(default_factory=list)
    finish_reason: str | None = None  # a FinishReason value
    error: str | None = None
    stop_sequence: str | None = None  # the stop string that ended the choice, if one did
    cached_tokens: int = 0  # prompt tokens served from the prefix cache (reported once)
    kind: str = "content"  # "reasoning": thinking text before a reasoning-aware constraint


@dataclass
class ChoiceResult:
    """A finished choice, accumulated from its deltas."""

    index: int
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[DecodedLogprob] = field(default_factory=list)
    finish_reason: str | None = None
    error: str | None = None
    stop_sequence: str | None = None
    cached_tokens: int = 0
    reasoning: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (name, arguments)
    resolved: bool = False  # tool calls parsed out of `text` (which then keeps only the text before them)

    def add(self, delta: ChoiceDelta) -> None:
        if delta.kind == "reasoning":
            self.reasoning += delta.text
        else:
            self.text += delta.text
        self.token_ids += delta.token_ids
        self.logprobs += delta.logprobs
        self.cached_tokens = max(self.cached_tokens, delta.cached_tokens)
        if delta.finish_reason is not None:
            self.finish_reason = delta.finish_reason
            self.error = delta.error
            self.stop_sequence = delta.stop_sequence


@dataclass
class Usage:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
