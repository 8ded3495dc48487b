"""Tiny random DeepSeek-V4 models built with transformers as the reference, and their logits.

`V4_FAMILIES` maps a test id to config overrides of `V4_TINY`: every layer type (sliding
only, CSA, HCA), hash and top-k MoE, hyper-connections, a sliding window of 6 and compress
rates 4 (CSA) and 8 (HCA), so the 40-token `V4_PROMPT` spans several windows and blocks, and
an index_topk smaller than the number of CSA entries so the Lightning Indexer really chooses.
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch

from model_reference import randomize

SLIDING, CSA, HCA = "sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"
V4_TINY = dict(
    vocab_size=96, hidden_size=64, moe_intermediate_size=24, num_hidden_layers=4, num_attention_heads=4,
    head_dim=16, q_lora_rank=32, partial_rotary_factor=0.5, num_experts_per_tok=2, n_routed_experts=8,
    layer_types=[SLIDING, CSA, HCA, CSA], mlp_layer_types=["hash_moe", "moe", "hash_moe", "moe"],
    compress_rates={CSA: 4, HCA: 8}, hc_mult=3, hc_sinkhorn_iters=5, sliding_window=6, o_groups=2,
    o_lora_rank=12, index_n_heads=4, index_head_dim=16, index_topk=3, max_position_embeddings=256,
    rms_norm_eps=1e-5, eos_token_id=None)
V4_FAMILIES: dict[str, dict] = {
    "v4": dict(V4_TINY),
    # yarn on the compressed layers (transformers fixes its attention factor at 1), sigmoid router
    "v4-yarn-sigmoid": dict(V4_TINY, layer_types=[HCA, CSA, SLIDING, HCA], scoring_func="sigmoid",
                            mlp_layer_types=["moe", "hash_moe", "moe", "moe"], hc_mult=2, index_topk=2,
                            rope_parameters={"rope_type": "yarn", "factor": 4.0,
                                             "original_max_position_embeddings": 64}),
}

V4_PROMPT = [(7 * i + 3) % 96 for i in range(40)]


def build_v4_reference(family: str, seed: int = 0):
    from transformers import AutoConfig, AutoModelForCausalLM

    # A deep copy: transformers' config folds legacy fields into the dicts it is given.
    config = AutoConfig.for_model("deepseek_v4", **copy.deepcopy(V4_FAMILIES[family]))
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32)
    randomize(model, seed)
    gen = torch.Generator().manual_seed(seed + 2)
    with torch.no_grad():  # hash routing: distinct random experts per token id
        for name, tensor in model.state_dict().items():
            if name.endswith("tid2eid"):
                rows = [torch.randperm(config.n_routed_experts, generator=gen)[:tensor.shape[1]]
                        for _ in range(tensor.shape[0])]
                tensor.copy_(torch.stack(rows))
    return model.eval()


def save_v4_reference(family: str, directory: Path, seed: int = 0):
    model = build_v4_reference(family, seed)
    model.save_pretrained(directory)
    return model


_SAVED: dict[str, tuple] = {}


def v4_reference(family: str, tmp_path_factory):
    """(transformers model, directory it was saved to), built once per test session."""
    if family not in _SAVED:
        directory = tmp_path_factory.mktemp(family)
        _SAVED[family] = (save_v4_reference(family, directory), directory)
    return _SAVED[family]


@torch.no_grad()
def v4_reference_prefill(model, ids: list[int]) -> torch.Tensor:
    return model(torch.tensor([ids])).logits[0].float()  # [T, V]


@torch.no_grad()
def v4_reference_chunks(model, ids: list[int], chunks: list[int]) -> torch.Tensor:
    """transformers' logits [sum(chunks), V] for `ids` fed `chunks[0]` tokens, then `chunks[1]`, ..."""
    from transformers import DynamicCache

    cache, rows, start = DynamicCache(config=model.config), [], 0
    for n in chunks:
        rows.append(model(torch.tensor([ids[start:start + n]]), cache=cache, use_cache=True).logits[0])
        start += n
    return torch.cat(rows).float()


def v4_reference_decode(model, ids: list[int], prefill: int) -> torch.Tensor:
    """transformers' logits for a prefill of `prefill` tokens, then one token at a time."""
    return v4_reference_chunks(model, ids, [prefill] + [1] * (len(ids) - prefill))
