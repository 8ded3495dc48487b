"""DeepSeek-V4 mixture of experts: hash or top-k routing, clamped SwiGLU experts, one shared expert.

As transformers 5.x computes it: router scores = act(x W_gate^T) with act sqrt(softplus) or
sigmoid; a top-k layer picks the k best of scores + e_score_correction_bias, a hash layer
takes the fixed experts `tid2eid[token id]`; either way the chosen scores, normalized to sum
to 1, times routed_scaling_factor weight the experts (transformers normalizes whatever
`norm_topk_prob` says). Every expert and the shared expert clamp their SwiGLU
pre-activations: gate <= swiglu_limit, |up| <= swiglu_limit. The router runs in the model
dtype (transformers does not keep V4's gate in float32), the correction bias in float32.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from deepinfer.errors import ModelLoadError
from deepinfer.model.deepseek_v4_config import HASH_MOE, DeepseekV4Config
from deepinfer.model.layers import Linear, Weights, frozen, gemm_weight, linear


def clamped_swiglu(gate_up: torch.Tensor, width: int, limit: float) -> torch.Tensor:
    """gate_up [T, 2 width] (gate first) -> silu(min(gate, limit)) * clamp(up, -limit, limit)."""
    gate, up = gate_up.split(width, dim=-1)
    return F.silu(gate.clamp(max=limit)) * up.clamp(min=-limit, max=limit)


class V4Router(nn.Module):
    def __init__(self, config: DeepseekV4Config, layer: int) -> None:
        super().__init__()
        self.hashed = config.mlp_layer_types[layer] == HASH_MOE
        self.num_experts, self.top_k = config.num_experts, config.num_experts_per_tok
        self.hidden, self.scaling = config.hidden_size, config.routed_scaling_factor
        self.sqrt_softplus = config.scoring_func == "sqrtsoftplus"

    def load(self, weights: Weights, prefix: str, vocab_size: int) -> None:
        self.weight = frozen(weights.take(prefix + "weight", (self.num_experts, self.hidden)))
        if self.hashed:
            self.tid2eid = frozen(weights.take(prefix + "tid2eid", (vocab_size, self.top_k), dtype=torch.long))
            if self.tid2eid.numel() and not 0 <= int(self.tid2eid.min()) <= int(self.tid2eid.max()) < self.num_experts:
                raise ModelLoadError(f"tensor '{prefix}tid2eid' names experts outside 0..{self.num_experts - 1}. "
                                     "The weights do not match config.json.")
        else:
            self.bias = frozen(weights.take(prefix + "e_score_correction_bias", (self.num_experts,),
                                            dtype=torch.float32))

    def forward(self, x: torch.Tensor, input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x [T, hidden], input_ids [T] -> (expert ids [T, k], weights [T, k] in the scores' dtype)."""
        logits = linear(x, self.weight)  # [T, E]
        scores = F.softplus(logits).sqrt() if self.sqrt_softplus else logits.sigmoid()
        if self.hashed:
            ids = self.tid2eid[input_ids]
        else:  # the bias steers the choice, never the weights
            ids = (scores + self.bias).topk(self.top_k, dim=-1, sorted=False).indices
        weights = scores.gather(1, ids)
        return ids, weights / (weights.sum(dim=-1, keepdim=True) + 1e-20) * self.scaling


class V4Experts(nn.Module):
    """Routed experts stacked: gate_up [E, 2I, hidden] (gate rows first), down [E, hidden, I]."""

    def __init__(self, config: DeepseekV4Config) -> None:
        super().__init__()
        self.num_experts, self.hidden = config.num_experts, config.hidden_size
        self.inter, self.limit = config.moe_intermediate_size, config.swiglu_limit

    def load(self, weights: Weights, prefix: str) -> None:
        n, hidden, inter = self.num_experts, self.hidden, self.inter
        if weights.has(prefix + "gate_up_proj"):  # transformers' in-memory layout
            gate_up = weights.take(prefix + "gate_up_proj", (n, 2 * inter, hidden))
            down = weights.take(prefix + "down_proj", (n, hidden, inter))
        else:  # one tensor per expert, as checkpoints store them
            gate_up = torch.stack([torch.cat([weights.take(f"{prefix}{e}.gate_proj.weight", (inter, hidden)),
                                              weights.take(f"{prefix}{e}.up_proj.weight", (inter, hidden))])
                                   for e in range(n)])
            down = torch.stack([weights.take(f"{prefix}{e}.down_proj.weight", (hidden, inter)) for e in range(n)])
        self.gate_up, self.down = frozen(gemm_weight(gate_up)), frozen(gemm_weight(down))

    def forward(self, x: torch.Tensor, ids: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """x [T, hidden], ids/weights [T, k] -> sum over k of weight * expert(x) [T, hidden]."""
        top_k = ids.shape[1]
        flat = ids.flatten()  # [T*k]
        order = flat.argsort(stable=True)  # slots grouped by expert
        tokens, slot_weights = order // top_k, weights.flatten()[order]
        counts = torch.bincount(flat, minlength=self.num_experts).tolist()  # the layer's one host sync
        out = torch.zeros_like(x)
        start = 0
        for e, count in enumerate(counts):
            if count == 0:
                continue
            idx = tokens[start:start + count]
            hidden = clamped_swiglu(linear(x.index_select(0, idx), self.gate_up[e]), self.inter, self.limit)
            y = linear(hidden, self.down[e]) * slot_weights[start:start + count, None]  # [count, hidden]
            out.index_add_(0, idx, y.to(x.dtype))
            start += count
        return out


class V4MoE(nn.Module):
    def __init__(self, config: DeepseekV4Config, layer: int, vocab_size: int) -> None:
        super().__init__()
        self.vocab_size, self.inter, self.limit = vocab_size, config.moe_intermediate_size, config.swiglu_limit
        self.router, self.experts = V4Router(config, layer), V4Experts(config)
        self.shared_gate_up = Linear(config.hidden_size, {"gate_proj": self.inter, "up_proj": self.inter})
        self.shared_down = Linear(self.inter, {"down_proj": config.hidden_size})

    def load(self, weights: Weights, prefix: str) -> None:
        self.router.load(weights, prefix + "gate.", self.vocab_size)
        self.experts.load(weights, prefix + "experts.")
        self.shared_gate_up.load(weights, prefix + "shared_experts.")
        self.shared_down.load(weights, prefix + "shared_experts.")

    def forward(self, x: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
        """x [T, hidden], input_ids [T] (hash routing reads them) -> [T, hidden]."""
        ids, weights = self.router(x, input_ids)
        shared = self.shared_down(clamped_swiglu(self.shared_gate_up(x), self.inter, self.limit))
        return self.experts(x, ids, weights) + shared
