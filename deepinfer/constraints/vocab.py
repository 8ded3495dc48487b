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

        Text tokens are sorted by their bytes, so the tokens with a given first
        byte, or first two bytes, are contiguous slices (`pair_start`).
        """
        ids = [i for i, b in enumerate(self.token_bytes) if b]
        ids.sort(key=self.token_bytes.__getitem__)
        n = len(ids)
        lengths = np.array([len(self.token_bytes[i]) for i in ids], dtype=np.int32)
        width = int(lengths.max()) if n else 1
        mat = np.zeros((n, width), dtype=np.uint8)  # [n, width], padded with 0
        flat = b"".join(self.token_bytes[i].ljust(width, b"\0") for i in ids)
        if n:
            mat[:] = np.frombuffer(flat, dtype=np.uint8).reshape(n, width)
        self.sorted_ids = np.array(ids, dtype=np.int32)          # [n]
        self.sorted_lengths = lengths                              # [n]
        # Column-major: byte column j of all tokens is contiguous (fast gathers).
        self.sorted_bytes_T = np.ascontiguousarray(mat.T)          # [width, n]
        self.sorted_bytes = self.sorted_bytes_T.T                  # [n, width] view
        # Prefix key of a token: b0 * 257 + (0 if it is one byte long, else 1 + b1).
        # pair_start[key] .. pair_start[key + 1] are the positions with that key.
        second = mat[:, 1].astype(np.int64) + 1 if width > 1 else 0
        keys = mat[:, 0].astype(np.int64) * 257 + np.where(lengths > 1, second, 0)
        self.sorted_keys = keys                                    # [n] int64, ascending
        # characters per token (bytes that are not UTF-8 continuation bytes)
        starts_char = (mat & 0xC0) != 0x80
        starts_char &= np.arange(width)[None, :] < lengths[:, None]
        self.sorted_nchars = starts_char.sum(axis=1).astype(np.int64)  # [n]
        self.pair_start = np.searchsorted(keys, np.arange(256 * 257 + 1)).astype(np.int64)
        self.first_byte_start = self.pair_start[::257].copy()       # [257]
        self.pair_counts = np.diff(self.pair_start)                  # [256 * 257] tokens per key
        sig = _suffix_signatures([self.token_bytes[i] for i in ids], mat, lengths)
        self.sorted_sig_from = sig                                 # [SIG_LEVELS, n, 3] uint64
        # the same, split by word: sig_words[k][w] is uint64 [n] contiguous
        self.sig_words = [[np.ascontiguousarray(sig[k, :, w]) for w in range(3)]
                          for k in range(SIG_LEVELS)]
        self.words = (self.size + 31) // 32
        eos = np.array(sorted(self.eos_ids), dtype=np.int64)
        self.eos_word_index = eos // 32
        self.eos_word_bits = (np.uint32(1) << (eos % 32).astype(np.uint32)).view(np.int32)

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        text = sum(b is not None for b in self.token_bytes)
        return f"Vocabulary(size={self.size}, text_tokens={text}, eos_ids={sorted(self.eos_ids)})"

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other) -> bool:
        return self is other

    def decode(self, ids: Iterable[int]) -> bytes:
        """The bytes of text tokens (eos and control tokens contribute nothing)."""
        return b"".join(self.token_bytes[i] or b"" for i in ids)


# Character signature of a byte string: which characters it contains, coarsely.
# Bits 0-127: that ASCII character; 128/129/130: some 2-/3-/4-byte UTF-8
# character; 131: bytes that are not complete UTF-8 characters. A DFA state
# whose loop covers every character named by a token's signature keeps the
# token in that state (see masks.loop_bits), so most tokens of "any text"
# states need no byte-by-byte walk.
SIG_LEVELS = 4  # signatures of bytes[k:] for k = 0..3
SIG_INVALID = 131


def _category_table() -> np.ndarray:
    lut = np.full(256, 255, dtype=np.int64)  # 255: continuation / invalid byte (no bit)
    lut[:0x80] = np.arange(0x80)
    lut[0xC2:0xE0], lut[0xE0:0xF0], lut[0xF0:0xF5] = 128, 129, 130
    return lut


def _suffix_signatures(tokens: list[bytes], mat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    n, width = mat.shape
    lut = _category_table()
    by_length = np.argsort(-lengths, kind="stable")
    counts = np.searchsorted(-lengths[by_length], -np.arange(width), side="left")  # len > p
    out = np.zeros((SIG_LEVELS, n, 3), dtype=np.uint64)
    sig = np.zeros((n, 3), dtype=np.uint64)
    one = np.uint64(1)
    for p in range(width - 1, -1, -1):
        rows = by_length[:counts[p]]                  # tokens longer than p
        col = lut[mat[rows, p]]
        keep = col != 255
        rows, col = rows[keep], col[keep]
        word, bits = col >> 6, one << (col & 63).astype(np.uint64)
        for w in range(3):  # each row appears once, so plain |= is exact
            sel = word == w
            sig[rows[sel], w] |= bits[sel]
        if p < SIG_LEVELS:
            out[p] = sig
    # suffixes that are not complete UTF-8 text get the invalid bit
    invalid = np.uint64(1) << np.uint64(SIG_INVALID - 128)
    for i in np.flatnonzero((mat >= 0x80).any(axis=1)).tolist():
        data = tokens[i]
        for k in range(min(SIG_LEVELS, len(data))):
            try:
                data[k:].decode("utf-8")
            except UnicodeDecodeError:
                out[k, i, 2] |= invalid
    return out


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
