"""The protocol-neutral request the routes hand to the engine, and its results.

Translators (`translate_*.py`) build a `Job` from a parsed request body; the
runner (`runner.py`) executes it; formatters turn `ChoiceResult`s back into
each protocol's response. Nothing here knows HTTP or a wire format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from deepinfer.server.constraint_spec import ConstraintSpec, ToolDecl

ToolMode = Literal["none", "auto", "forced"]


@dataclass
class Sampling:
    """Sampling fields as the client set them (None: engine default)."""

    max_tokens: int
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    repetition_penalty: float | None = None
    logit_bias: dict[int, float] | None = None
    logprobs: int | None = None  # None: no logprobs; k: the sampled token plus k alternatives


@dataclass
class Job:
    """One request: a prompt, n choices, sampling, at most one constraint."""

    prompt_token_ids: list[int]
    prompt_text: str
    sampling: Sampling
    n: int = 1
    constraint: ConstraintSpec | None = None
    tool_mode: ToolMode = "none"
    tools: list[ToolDecl] = field(default_factory=list)
    parallel_tool_calls: bool = True  # several calls in one turn (OpenAI's default); False: at most one
    reasoning_aware: bool = False
    reasoning_end: str = "</think>"
    json_whitespace: str | None = None  # server-wide JSON Schema whitespace mode (None: compiler default)


@dataclass
class TokenLogprob:
    token: str
    token_id: int
    logprob: float
    top: list[tuple[str, int, float]] = field(default_factory=list)  # (token, id, logprob)
    bytes: list[int] | None = None  # the token's exact bytes (a token may end mid-character)
    top_bytes: list[list[int] | None] = field(default_factory=list)


@dataclass
class Delta:
    """New output of one choice since the previous delta."""

    index: int
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[TokenLogprob] = field(default_factory=list)
    finish_reason: str | None = None  # "stop", "length", "abort", "error"
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
    logprobs: list[TokenLogprob] = field(default_factory=list)
    finish_reason: str | None = None
    error: str | None = None
    stop_sequence: str | None = None
    cached_tokens: int = 0
    reasoning: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (name, arguments)
    resolved: bool = False  # tool calls parsed out of `text` (which then keeps only the text before them)

    def add(self, delta: Delta) -> None:
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
