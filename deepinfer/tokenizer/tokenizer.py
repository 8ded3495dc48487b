"""The `Tokenizer`: text <-> token ids, special tokens, eos ids and chat rendering.

A thin layer over a `tokenizers.Tokenizer` (the tokenizer.json format) that
adds what a serving engine needs and tokenizer.json alone does not say: which
ids end a generation (config.json, generation_config.json and the tokenizer's
eos token, united), the chat template, and streaming decode. Knows nothing
about models or the engine.
"""

from __future__ import annotations

from functools import cached_property, partial
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer as BackendTokenizer

from deepinfer.errors import ModelLoadError
from deepinfer.tokenizer import deepseek_v4_chat
from deepinfer.tokenizer.chat import ChatTemplate, ChatTemplateError
from deepinfer.tokenizer.detokenizer import IncrementalDetokenizer
from deepinfer.tokenizer.files import TokenizerFiles, read_tokenizer_dir
from deepinfer.tokenizer.gguf_vocab import read_gguf_tokenizer


class Tokenizer:
    """Encode/decode plus the facts generation needs; build with `from_pretrained`."""

    def __init__(self, files: TokenizerFiles) -> None:
        try:
            self.backend: BackendTokenizer = BackendTokenizer.from_str(files.tokenizer_json)
        except Exception as exc:  # the Rust side raises plain Exception on bad JSON
            raise ModelLoadError(f"the tokenizer of {files.source} cannot be parsed ({exc}); "
                                 "restore tokenizer.json from the model's distribution.") from exc
        self.source = files.source
        self.tokenizer_config = files.tokenizer_config
        self.special_tokens: dict[str, str] = dict(files.special_tokens)
        self.bos_token_id: int | None = self.token_to_id(self.special_tokens.get("bos_token"))
        self.eos_token_id: int | None = self.token_to_id(self.special_tokens.get("eos_token"))
        self.pad_token_id: int | None = self.token_to_id(self.special_tokens.get("pad_token"))
        eos = set(files.eos_token_ids)
        if self.eos_token_id is not None:
            eos.add(self.eos_token_id)
        self.eos_token_ids: frozenset[int] = frozenset(eos)
        self.add_bos_token = bool(files.tokenizer_config.get("add_bos_token", False))
        self.chat_template: str | None = files.chat_template
        self.chat_format: str | None = files.chat_format

    @classmethod
    def from_pretrained(cls, path: str | Path) -> "Tokenizer":
        """Load from a model directory (tokenizer.json, ...) or a .gguf file."""
        path = Path(path)
        if path.is_dir():
            return cls(read_tokenizer_dir(path))
        if path.suffix.lower() == ".gguf" or path.is_file():
            return cls(read_gguf_tokenizer(path))
        raise ModelLoadError(f"tokenizer path {path} does not exist; pass a model directory "
                             "(with tokenizer.json) or a .gguf file.")

    # -- vocabulary -------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        """Number of token ids the tokenizer can produce (added tokens included)."""
        return self.backend.get_vocab_size(with_added_tokens=True)

    def token_to_id(self, token: str | None) -> int | None:
        return None if token is None else self.backend.token_to_id(token)

    def id_to_token(self, token_id: int) -> str | None:
        return self.backend.id_to_token(token_id)

    @cached_property
    def special_token_ids(self) -> frozenset[int]:
        """Ids of added tokens marked special (what decode(skip_special_tokens=True) drops)."""
        return frozenset(i for i, t in self.backend.get_added_tokens_decoder().items() if t.special)

    # -- text <-> ids -----------------------------------------------------------------------
    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        ids = self.backend.encode(text, add_special_tokens=add_special_tokens).ids
        if (add_special_tokens and self.add_bos_token and self.bos_token_id is not None
                and (not ids or ids[0] != self.bos_token_id)):
            ids = [self.bos_token_id, *ids]
        return ids

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return self.backend.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def detokenizer(self, skip_special_tokens: bool = True) -> IncrementalDetokenizer:
        return IncrementalDetokenizer(partial(self.decode, skip_special_tokens=skip_special_tokens))

    # -- chat -------------------------------------------------------------------------------
    def apply_chat_template(self, messages: list[dict[str, Any]], add_generation_prompt: bool = True,
                            tools: list[dict[str, Any]] | None = None, **kwargs: Any) -> str:
        """Render messages with the model's chat template (sandboxed jinja2), as text.

        A DeepSeek-V4 model (no template; `chat_format` "deepseek_v4") renders with V4's own
        format; `thinking=True` (or `enable_thinking=True`) opens the answer with `<think>`."""
        if self.chat_template is None and self.chat_format == "deepseek_v4":
            thinking = bool(kwargs.get("thinking", kwargs.get("enable_thinking", False)))
            return deepseek_v4_chat.render(messages, tools=tools, add_generation_prompt=add_generation_prompt,
                                           thinking=thinking)
        if self.chat_template is None:
            raise ChatTemplateError(
                f"the model at {self.source} has no chat template (tokenizer_config.json "
                "'chat_template', chat_template.jinja or GGUF 'tokenizer.chat_template'); "
                "use plain completion instead of chat.")
        template = ChatTemplate(self.chat_template, self.special_tokens)
        return template.render(messages, add_generation_prompt=add_generation_prompt, tools=tools,
                               **kwargs)

    def __repr__(self) -> str:
        return f"Tokenizer({self.source!r}, vocab_size={self.vocab_size})"
