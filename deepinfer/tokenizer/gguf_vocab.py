"""Rebuilding a Hugging Face tokenizer from a GGUF file's tokenizer metadata.

A GGUF carries no tokenizer.json: llama.cpp stores the vocabulary, merges,
token types and special ids as `tokenizer.ggml.*` metadata, and names the
pre-tokenizer split by `tokenizer.ggml.pre`. This module turns those into a
tokenizer.json (built with the `tokenizers` library), a tokenizer_config and
the end-of-generation ids, and opens GGUF files with precise errors. It knows
nothing about model weights.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors

from deepinfer.errors import ModelLoadError
from deepinfer.tokenizer.files import TokenizerFiles

# llama.cpp token types (gguf.TokenType)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

_LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# tokenizer.ggml.pre -> the split regex the vocabulary was trained with (llama.cpp's
# llama-vocab.cpp). None = GPT-2's own regex, applied by the ByteLevel pre-tokenizer.
_PRE_SPLITS: dict[str, str | None] = {
    "default": None, "gpt2": None, "gpt-2": None,
    "llama3": _LLAMA3_SPLIT, "llama-v3": _LLAMA3_SPLIT, "llama-bpe": _LLAMA3_SPLIT,
    "smaug-bpe": _LLAMA3_SPLIT, "dbrx": _LLAMA3_SPLIT,
    "qwen2": _QWEN2_SPLIT, "deepseek-r1-qwen": _QWEN2_SPLIT,
}
# Pre-tokenizers that split every digit off first, then apply GPT-2's regex.
_DIGIT_THEN_GPT2 = {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva"}

# Token texts llama.cpp treats as end-of-generation besides eos (llama-vocab.cpp, EOG detection).
_EOG_TEXTS = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>",
              "<|end_of_text|>", "<｜end▁of▁sentence｜>", "<|eom_id|>", "<|return|>", "<|call|>"}


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table (the byte-level alphabet)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, map(chr, chars)))


BYTE_TO_CHAR = _bytes_to_unicode()
_ALPHABET = set(BYTE_TO_CHAR.values())


def open_gguf(path: Path):
    """A gguf.GGUFReader over `path` and its metadata as plain Python values."""
    from gguf import GGUFReader

    if not path.is_file():
        raise ModelLoadError(f"GGUF file {path} does not exist; check the path given with --model "
                             "or DEEPINFER_MODEL_DIR.")
    try:
        reader = GGUFReader(str(path))
        metadata = {key: field.contents() for key, field in reader.fields.items()}
    except Exception as exc:  # the reader raises ValueError, IndexError, struct errors... on bad bytes
        raise ModelLoadError(
            f"{path} is not a readable GGUF file ({type(exc).__name__}: {exc}). The file is corrupt "
            "or truncated: download it again, or point --model at another model.") from exc
    return reader, metadata


def _required(metadata: dict[str, Any], key: str, source: str) -> Any:
    if key not in metadata:
        raise ModelLoadError(f"GGUF file {source} lacks the metadata field '{key}'; it cannot be "
                             "used without it. Re-convert the model with a recent llama.cpp.")
    return metadata[key]


def _pre_tokenizer(pre: str | None):
    if pre in _DIGIT_THEN_GPT2:
        return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    split = _PRE_SPLITS.get(pre or "default")
    if split is None:
        return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(split), behavior="isolated"),
                                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])


def _byte_level_tokenizer(metadata: dict[str, Any], source: str) -> Tokenizer:
    tokens: list[str] = _required(metadata, "tokenizer.ggml.tokens", source)
    types: list[int] = metadata.get("tokenizer.ggml.token_type") or [NORMAL] * len(tokens)
    merges = [tuple(m.split(" ", 1)) for m in _required(metadata, "tokenizer.ggml.merges", source)]
    # A token llama.cpp stored in plain text rather than the byte alphabet gets respelled,
    # so BPE can reach it (transformers does the same).
    vocab = {}
    for index, token in enumerate(tokens):
        spelled = token if set(token) <= _ALPHABET else "".join(BYTE_TO_CHAR[b] for b in token.encode())
        vocab.setdefault(spelled, index)
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    pre = metadata.get("tokenizer.ggml.pre")
    if pre is not None and pre not in _PRE_SPLITS and pre not in _DIGIT_THEN_GPT2:
        raise ModelLoadError(f"GGUF file {source} uses the pre-tokenizer '{pre}' "
                             "(tokenizer.ggml.pre), which deepinfer does not know; use the model's "
                             "Hugging Face directory (with tokenizer.json) instead.")
    tokenizer.pre_tokenizer = _pre_tokenizer(pre)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    # Control tokens are special (skipped by decode(skip_special_tokens=True)); user-defined
    # tokens are matched whole but kept in decoded text.
    specials = [AddedToken(t, normalized=False, special=True) for t, ty in zip(tokens, types)
                if ty == CONTROL and set(t) <= _ALPHABET]
    users = [AddedToken(t, normalized=False, special=False) for t, ty in zip(tokens, types)
             if ty == USER_DEFINED]
    tokenizer.add_special_tokens(specials)
    tokenizer.add_tokens(users)
    return tokenizer


def sentencepiece_merges(tokens: list[str], scores: list[float]) -> list[tuple[str, str]]:
    """BPE merges implied by a SentencePiece vocabulary: every split of a token into two
    tokens, best score first (transformers' `generate_merges`, which the reference uses)."""
    vocab = {token: index for index, token in enumerate(tokens)}
    candidates = []
    for token, score in zip(tokens, scores):
        local = [(token[:i], token[i:], score) for i in range(1, len(token))
                 if token[:i] in vocab and token[i:] in vocab]
        candidates.extend(sorted(local, key=lambda m: (vocab[m[0]], vocab[m[1]])))
    candidates.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    return [(left, right) for left, right, _ in candidates]


def _sentencepiece_tokenizer(metadata: dict[str, Any], source: str) -> Tokenizer:
    """Llama-2/Mistral style: `▁` for spaces, <0xNN> byte fallback, merges from scores."""
    tokens: list[str] = _required(metadata, "tokenizer.ggml.tokens", source)
    types: list[int] = metadata.get("tokenizer.ggml.token_type") or [NORMAL] * len(tokens)
    if "tokenizer.ggml.merges" in metadata:
        merges = [tuple(m.split(" ", 1)) for m in metadata["tokenizer.ggml.merges"]]
    else:
        merges = sentencepiece_merges(tokens, _required(metadata, "tokenizer.ggml.scores", source))
    vocab: dict[str, int] = {}
    for index, token in enumerate(tokens):
        vocab.setdefault(token, index)
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=True, byte_fallback=True))
    # As transformers' LlamaTokenizer (non-legacy): a prefix space before the first word only.
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                           decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    tokenizer.add_special_tokens([AddedToken(t, normalized=False, special=True)
                                  for t, ty in zip(tokens, types) if ty == CONTROL])
    tokenizer.add_tokens([AddedToken(t, normalized=False, special=False)
                          for t, ty in zip(tokens, types) if ty == USER_DEFINED])
    return tokenizer


def eog_token_ids(metadata: dict[str, Any]) -> list[int]:
    """eos first, then eot/eom and the control tokens llama.cpp stops at."""
    tokens = metadata.get("tokenizer.ggml.tokens") or []
    types = metadata.get("tokenizer.ggml.token_type") or []
    ids = [metadata[k] for k in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                                 "tokenizer.ggml.eom_token_id") if isinstance(metadata.get(k), int)]
    ids += [i for i, (t, ty) in enumerate(zip(tokens, types)) if ty == CONTROL and t in _EOG_TEXTS]
    return list(dict.fromkeys(ids))


def gguf_tokenizer_files(metadata: dict[str, Any], source: str) -> TokenizerFiles:
    """tokenizer.json, tokenizer_config and eos ids described by GGUF metadata."""
    kind = metadata.get("tokenizer.ggml.model")
    if kind not in ("gpt2", "llama"):
        raise ModelLoadError(
            f"GGUF file {source} has a '{kind}' tokenizer (tokenizer.ggml.model); deepinfer rebuilds "
            "byte-level BPE ('gpt2') and SentencePiece BPE ('llama') tokenizers from GGUF. Use the "
            "model's Hugging Face directory (with tokenizer.json) instead.")
    if kind == "gpt2":
        backend = _byte_level_tokenizer(metadata, source)
    else:
        backend = _sentencepiece_tokenizer(metadata, source)
    tokens = metadata["tokenizer.ggml.tokens"]
    special: dict[str, str] = {}
    for name, key in (("bos_token", "bos"), ("eos_token", "eos"), ("unk_token", "unknown"),
                      ("pad_token", "padding")):
        index = metadata.get(f"tokenizer.ggml.{key}_token_id")
        if isinstance(index, int) and 0 <= index < len(tokens):
            special[name] = tokens[index]
    config: dict[str, Any] = {
        # llama.cpp adds BOS to SentencePiece vocabularies that do not say otherwise.
        "add_bos_token": bool(metadata.get("tokenizer.ggml.add_bos_token", kind == "llama")),
        "add_eos_token": bool(metadata.get("tokenizer.ggml.add_eos_token", False)),
        "clean_up_tokenization_spaces": False,
        "tokenizer_class": "PreTrainedTokenizerFast",
        **special,
    }
    template = metadata.get("tokenizer.chat_template")
    if isinstance(template, str):
        config["chat_template"] = template
    arch = metadata.get("general.architecture")
    if isinstance(metadata.get(f"{arch}.context_length"), int):
        config["model_max_length"] = metadata[f"{arch}.context_length"]
    return TokenizerFiles(
        tokenizer_json=backend.to_str(),
        tokenizer_config=config,
        special_tokens=special,
        eos_token_ids=set(eog_token_ids(metadata)),
        chat_template=template if isinstance(template, str) else None,
        source=source,
    )


def read_gguf_tokenizer(path: Path) -> TokenizerFiles:
    """Tokenizer files for a .gguf path (reads metadata only)."""
    _, metadata = open_gguf(path)
    return gguf_tokenizer_files(metadata, str(path))
