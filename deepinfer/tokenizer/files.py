"""Reading the tokenizer side of a model directory into one plain record.

Owns which files a Hugging Face model directory spreads tokenizer facts over
(tokenizer.json, tokenizer_config.json, special_tokens_map.json,
generation_config.json, config.json, chat_template.jinja/.json) and how their
variants are normalised (a special token given as a string or as an
AddedToken dict, eos ids as an int or a list). Knows nothing about GGUF or
the `tokenizers` library.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deepinfer.errors import ModelLoadError

SPECIAL_TOKEN_KEYS = ("bos_token", "eos_token", "unk_token", "pad_token")


@dataclass
class TokenizerFiles:
    """Everything the tokenizer layer needs, whatever the source format."""

    tokenizer_json: str  # contents of tokenizer.json
    tokenizer_config: dict[str, Any] = field(default_factory=dict)
    special_tokens: dict[str, str] = field(default_factory=dict)  # bos_token -> "<s>", ...
    eos_token_ids: set[int] = field(default_factory=set)  # ids named by config/generation_config
    chat_template: str | None = None
    chat_format: str | None = None  # a built-in format where the model ships no template ("deepseek_v4")
    source: str = ""  # file or directory, for error messages


def token_content(value: Any) -> str | None:
    """A special token as tokenizer_config writes it: "<s>" or {"content": "<s>", ...}."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def id_list(value: Any) -> list[int]:
    """eos_token_id as configs write it: an int, a list of ints, or absent."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
    return []


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"{path} is not valid JSON ({exc}); restore the file from the model's "
                             "original distribution or point --model at another model.") from exc
    if not isinstance(data, dict):
        raise ModelLoadError(f"{path} must hold a JSON object, found {type(data).__name__}.")
    return data


def _chat_template(directory: Path, tokenizer_config: dict[str, Any]) -> str | None:
    """chat_template.jinja wins over chat_template.json over tokenizer_config.json (as in transformers)."""
    jinja = directory / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    as_json = _read_json(directory / "chat_template.json")
    template = as_json.get("chat_template") or tokenizer_config.get("chat_template")
    if isinstance(template, list):  # named templates: [{"name": "default", "template": ...}, ...]
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default") or next(iter(named.values()), None)
    return template if isinstance(template, str) else None


def _chat_format(directory: Path, template: str | None) -> str | None:
    """DeepSeek-V4 checkpoints define their chat format in Python (encoding/encoding_dsv4.py), not
    jinja: a V4 directory without a template gets the built-in V4 format."""
    if template is not None:
        return None
    config = _read_json(directory / "config.json")
    if config.get("model_type") == "deepseek_v4" or (directory / "encoding" / "encoding_dsv4.py").is_file():
        return "deepseek_v4"
    return None


def read_tokenizer_dir(directory: Path) -> TokenizerFiles:
    """Collect the tokenizer facts of a Hugging Face model directory."""
    tokenizer_path = directory / "tokenizer.json"
    if not tokenizer_path.is_file():
        raise ModelLoadError(
            f"{directory} has no tokenizer.json. deepinfer needs a fast-tokenizer file: save the "
            "tokenizer with transformers (`AutoTokenizer.from_pretrained(...).save_pretrained(dir)`) "
            "or use the model's GGUF file instead.")
    tokenizer_config = _read_json(directory / "tokenizer_config.json")
    special_map = _read_json(directory / "special_tokens_map.json")
    special: dict[str, str] = {}
    for key in SPECIAL_TOKEN_KEYS:
        # tokenizer_config.json is what transformers reads last, so it wins.
        content = token_content(tokenizer_config.get(key)) or token_content(special_map.get(key))
        if content is not None:
            special[key] = content
    eos_ids: set[int] = set()
    for name in ("config.json", "generation_config.json"):
        eos_ids.update(id_list(_read_json(directory / name).get("eos_token_id")))
    return TokenizerFiles(
        tokenizer_json=tokenizer_path.read_text(encoding="utf-8"),
        tokenizer_config=tokenizer_config,
        special_tokens=special,
        eos_token_ids=eos_ids,
        chat_template=(template := _chat_template(directory, tokenizer_config)),
        chat_format=_chat_format(directory, template),
        source=str(directory),
    )
