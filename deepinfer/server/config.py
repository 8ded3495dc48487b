"""Server-wide settings, fixed when the app is created."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServerConfig:
    model_name: str
    api_key: str | None = None
    default_max_tokens: int = 512  # when a request sets none (and the context allows)
    max_model_len: int | None = None
    reasoning_aware: bool = False  # default for requests that do not say
    reasoning_end: str = "</think>"
    json_whitespace: str | None = None  # JSON Schema whitespace mode: default / compact / unbounded
    compile_timeout_s: float = 60.0  # admission-time constraint compile limit (a 400 past it)

    def max_tokens(self, requested: int | None, prompt_len: int) -> int:
        if requested is not None:
            return requested
        if self.max_model_len is None:
            return self.default_max_tokens
        return max(1, min(self.default_max_tokens, self.max_model_len - prompt_len))
