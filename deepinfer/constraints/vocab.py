"""The token vocabulary as bytes: every token id -> the exact bytes it emits.

Owns reading a HuggingFace `tokenizer.json` (byte-level BPE like GPT-2,
SmolLM2, Llama-3, Qwen, DeepSeek; SentencePiece style with `▁` and `<0xNN>`
byte fallback), deciding which ids can never match text (special and control
tokens, ids past the tokenizer's length) and which ids end a sequence, and the
numpy arrays the mask computation walks. Knows nothing about grammars.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

from .errors import ConstraintError

EOS_NAMES = ("<|endoftext|>", "<|im_end|>", "</s>", "<｜end▁of▁sentence｜>", "<|eot_id|>",
             "<|end_of_text|>", "<|eom_id|>", "<end_of_turn>", "<|end|>")
# Non-special added tokens that look like control markers (<think>, <|EOT|>,
# <｜User｜>, [INST], <dsml:) never match text; plain-text added tokens do.
_CONTROL_RE = re.compile(r"^(<[^\s]*|\[[^\s]*\]|[^\s]*｜[^\s]*)$")
_BYTE_FALLBACK_RE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


def _gpt2_unicode_to_byte() -> dict[str, int]:
    """Inverse of GPT-2's bytes_to_unicode table (printable stand-ins for bytes)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


UNICODE_TO_BYTE = _gpt2_unicode_to_byte()


@dataclass
class Vocabulary:
    """Token bytes for ids 0..size-1; `None` = never matches text.

    `size` is the logits width (may exceed the tokenizer's length). Built once
    per model and shared: the mask cache of compiled constraints lives here so
    that equal sub-automata share their masks across constraints.
    """

    token_bytes: list[bytes | None]
    eos_ids: frozenset[int]
    size: int
    mask_cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.size < len(self.token_bytes):
            raise ConstraintError(f"vocab_size {self.size} is smaller than the tokenizer's "
                                  f"{len(self.token_bytes)} tokens")
        self.token_bytes = list(self.token_bytes) + [None] * (self.size - len(self.token_bytes))
        bad = [i for i in self.eos_ids if not 0 <= i < self.size]
        if bad:
            raise ConstraintError(f"end-of-sequence ids {bad} are outside the vocabulary")
        self._build_arrays()

    # ----------------------------------------------------------- constructors
    @classmethod
    def from_token_bytes(cls, tokens: Iterable[bytes | None], eos_ids: Iterable[int] = (),
                         vocab_size: int | None = None) -> "Vocabulary":
        tokens = list(tokens)
        return cls(tokens, frozenset(eos_ids), vocab_size or len(tokens))

    @classmethod
    def from_tokenizer_json(cls, path, vocab_size: int | None = None,
                            eos_ids: Iterable[int] | None = None) -> "Vocabulary":
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConstraintError(f"cannot read tokenizer {path}: {exc}") from exc
        return cls._from_json_dict(data, vocab_size, eos_ids, path.parent)

    @classmethod
    def from_tokenizer(cls, tokenizer, vocab_size: int | None = None,
                       eos_ids: Iterable[int] | None = None) -> "Vocabulary":
        """From a `tokenizers.Tokenizer` (or an object with `.backend` holding one)."""
        backend = getattr(tokenizer, "backend", tokenizer)
        if eos_ids is None and getattr(tokenizer, "eos_token_ids", None):
            eos_ids = tokenizer.eos_token_ids
        data = json.loads(backend.to_str())
        return cls._from_json_dict(data, vocab_size, eos_ids, None)

    @classmethod
    def from_pretrained(cls, model_dir, vocab_size: int | None = None) -> "Vocabulary":
        """From a model directory with tokenizer.json (and optional config files)."""
        model_dir = Path(model_dir)
        if vocab_size is None:
            vocab_size = _read_json(model_dir / "config.json").get("vocab_size")
        return cls.from_tokenizer_json(model_dir / "tokenizer.json", vocab_size)

    @classmethod
    def _from_json_dict(cls, data: dict, vocab_size, eos_ids, folder: Path | None) -> "Vocabulary":
        model = data.get("model") or {}
        vocab: dict[str, int] = model.get("vocab") or {}
        if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
            vocab = {piece: i for i, (piece, _score) in enumerate(vocab)}
        added = data.get("added_tokens") or []
        length = max([*vocab.values(), *(a["id"] for a in added), -1]) + 1
        style = _detect_style(data)
        tokens: list[bytes | None] = [None] * length
        for piece, idx in vocab.items():
            tokens[idx] = _piece_bytes(piece, style)
        names: dict[str, int] = dict(vocab)
        for tok in added:
            names[tok["content"]] = tok["id"]
            control = tok.get("special") or _CONTROL_RE.match(tok["content"])
            tokens[tok["id"]] = None if control else tok["content"].encode("utf-8")
        if eos_ids is None:
            eos_ids = _find_eos_ids(folder, names)
        return cls(tokens, frozenset(eos_ids), max(vocab_size or 0, length))

    # ----------------------------------------------------------------- arrays
    def _build_arrays(self) -> None:
        """Numpy views for vectorized mask computation (see masks.py).

        tokens (non-empty, text-matching) are sorted by first byte, then by
        length descending within each first-byte group, so that the tokens
        with a given first byte are a contiguous slice.
        """
        ids = [i for i, b in enumerate(self.token_bytes) if b]
        ids.sort(key=lambda i: (self.token_bytes[i][0], -len(self.token_bytes[i])))
        n = len(ids)
        lengths = np.array([len(self.token_bytes[i]) for i in ids], dtype=np.int32)
        width = int(lengths.max()) if n else 1
        mat = np.zeros((n, width), dtype=np.uint8)  # [n, width], padded with 0
        flat = b"".join(self.token_bytes[i].ljust(width, b"\0") for i in ids)
        if n:
            mat[:] = np.frombuffer(flat, dtype=np.uint8).reshape(n, width)
        self.sorted_ids = np.array(ids, dtype=np.int32)          # [n]
        self.sorted_lengths = lengths                              # [n]
        self.sorted_bytes = mat                                    # [n, width]
        first = mat[:, 0] if n else np.zeros(0, np.uint8)
        self.first_byte_start = np.searchsorted(first, np.arange(257), side="left").astype(np.int64)
        self.words = (self.size + 31) // 32
        eos = np.array(sorted(self.eos_ids), dtype=np.int64)
        self.eos_word_index = eos // 32
        self.eos_word_bits = (np.uint32(1) << (eos % 32).astype(np.uint32)).view(np.int32)

    def __len__(self) -> int:
        return self.size

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other) -> bool:
        return self is other

    def decode(self, ids: Iterable[int]) -> bytes:
        """The bytes of text tokens (eos and control tokens contribute nothing)."""
        return b"".join(self.token_bytes[i] or b"" for i in ids)


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _find_eos_ids(folder: Path | None, names: dict[str, int]) -> set[int]:
    """eos ids from config files beside tokenizer.json, else well-known names."""
    found: set[int] = set()
    if folder is not None:
        tok_cfg = _read_json(folder / "tokenizer_config.json")
        eos = tok_cfg.get("eos_token")
        if isinstance(eos, dict):
            eos = eos.get("content")
        if isinstance(eos, str) and eos in names:
            found.add(names[eos])
        for cfg in (_read_json(folder / "generation_config.json"), _read_json(folder / "config.json")):
            value = cfg.get("eos_token_id")
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, int):
                    found.add(v)
    if not found:
        found = {names[n] for n in EOS_NAMES if n in names}
    return found


def _contains_type(node, kind: str) -> bool:
    if isinstance(node, dict):
        if node.get("type") == kind:
            return True
        return any(_contains_type(v, kind) for v in node.values())
    if isinstance(node, list):
        return any(_contains_type(v, kind) for v in node)
    return False


def _detect_style(data: dict) -> str:
    """'byte_level' (GPT-2 map) or 'sentencepiece' (▁ = space, <0xNN> fallback)."""
    for part in ("decoder", "pre_tokenizer"):
        if _contains_type(data.get(part), "ByteLevel"):
            return "byte_level"
    return "sentencepiece"


def _piece_bytes(piece: str, style: str) -> bytes:
    if style == "byte_level":
        try:
            return bytes(UNICODE_TO_BYTE[ch] for ch in piece)
        except KeyError:  # not a byte-level piece: tokenizers falls back to UTF-8
            return piece.encode("utf-8")
    fallback = _BYTE_FALLBACK_RE.match(piece)
    if fallback:
        return bytes([int(fallback.group(1), 16)])
    return piece.replace("▁", " ").encode("utf-8")
