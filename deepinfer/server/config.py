"""Server-wide settings, fixed when the app is created."""

from __future__ import annotations

from dataclasses import dataclass

from deepinfer.server.guard import DEFAULT_MAX_BODY_BYTES

# `deepinfer serve --compile-memory`'s default (2 GiB): a 7,000-property schema grew a server by
# ~2.2 GB while lowering before its time limit stopped it; this stops such a compile sooner
DEFAULT_COMPILE_MEMORY_BYTES = 2048 << 20


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
    # ... and its memory limit: resident growth of the process during one compile (None: none)
    compile_memory_bytes: int | None = DEFAULT_COMPILE_MEMORY_BYTES
    compile_workers: int = 4  # admission-time compiles running at once (see validation.py)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES  # larger bodies are a 413, refused before parsing
    allowed_hosts: tuple[str, ...] = ()  # Host names accepted besides loopback when there is no API key
    max_token_chars: int | None = None  # the longest token's characters: bounds a text's token count below

    def max_tokens(self, requested: int | None, prompt_len: int) -> int:
        if requested is not None:
            return requested
        if self.max_model_len is None:
            return self.default_max_tokens
        return max(1, min(self.default_max_tokens, self.max_model_len - prompt_len))
