"""DeepSeek-V3 mixture of experts: sigmoid router with correction bias, group-limited top-k,
routed experts computed only for the tokens routed to them, plus shared experts.

Routing follows transformers 5.x `DeepseekV3TopkRouter` (router in float32, as
transformers keeps `gate.weight` and `e_score_correction_bias` in float32).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from deepinfer.model.config import ModelConfig
from deepinfer.model.layers import SwiGLU, Weights, frozen, gemm_weight, linear


class Router(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.moe, self.hidden = config.moe, config.hidden_size

    def load(self, weights: Weights, prefix: str) -> None:
        n = self.moe.num_experts
        self.weight = frozen(weights.take(prefix + "weight", (n, self.hidden), dtype=torch.float32))
        self.bias = frozen(weights.take(prefix + "e_score_correction_bias", (n,), dtype=torch.float32))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x [T, hidden] -> (expert ids [T, k], float32 weights [T, k])."""
        moe = self.moe
        scores = F.linear(x.float(), self.weight).sigmoid()  # [T, E]
        choice = scores + self.bias  # the bias steers the choice, never the weights
        if moe.topk_groups < moe.num_groups:
            # Rank groups by the sum of their two best experts; keep topk_groups of them.
            grouped = choice.view(-1, moe.num_groups, moe.num_experts // moe.num_groups)  # [T, G, E/G]
            group_scores = grouped.topk(2, dim=-1)[0].sum(dim=-1)  # [T, G]
            keep = torch.zeros_like(group_scores, dtype=torch.bool)
            keep.scatter_(1, group_scores.topk(moe.topk_groups, dim=-1, sorted=False)[1], True)
            choice = grouped.masked_fill(~keep.unsqueeze(-1), float("-inf")).view(-1, moe.num_experts)
        ids = choice.topk(moe.num_experts_per_tok, dim=-1, sorted=False)[1]  # [T, k]
        weights = scores.gather(1, ids)
        if moe.norm_topk_prob:
            weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
        return ids, weights * moe.routed_scaling_factor


class Experts(nn.Module):
    """Routed experts stored stacked: gate_up [E, 2I, hidden], down [E, hidden, I]."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.num_experts, self.hidden = config.moe.num_experts, config.hidden_size
        self.intermediate = config.moe.moe_intermediate_size

    def load(self, weights: Weights, prefix: str) -> None:
        hidden, inter = self.hidden, self.intermediate
        gate_up, down = [], []
        for e in range(self.num_experts):
            p = f"{prefix}{e}."
            gate_up.append(torch.cat([weights.take(p + "gate_proj.weight", (inter, hidden)),
                                      weights.take(p + "up_proj.weight", (inter, hidden))]))
            down.append(weights.take(p + "down_proj.weight", (hidden, inter)))
        self.gate_up = frozen(gemm_weight(torch.stack(gate_up)))
        self.down = frozen(gemm_weight(torch.stack(down)))

    def forward(self, x: torch.Tensor, ids: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """x [T, hidden], ids/weights [T, k] -> sum over k of weight * expert(x) [T, hidden]."""
        top_k = ids.shape[1]
        flat = ids.flatten()  # [T*k]
        order = flat.argsort(stable=True)  # slots grouped by expert
        tokens = order // top_k  # token of each sorted slot
        slot_weights = weights.flatten()[order]
        # The one host sync of the layer: how many tokens each expert gets.
        counts = torch.bincount(flat, minlength=self.num_experts).tolist()
        out = torch.zeros_like(x)
        start = 0
        for e, n in enumerate(counts):
            if n == 0:
                continue
            idx = tokens[start:start + n]
            gate, up = linear(x.index_select(0, idx), self.gate_up[e]).split(self.intermediate, dim=-1)
            y = linear(F.silu(gate) * up, self.down[e])  # [n, hidden]
            out.index_add_(0, idx, (y * slot_weights[start:start + n, None]).to(x.dtype))
            start += n
        return out


class MoE(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        moe = config.moe
        self.router, self.experts = Router(config), Experts(config)
        shared = moe.moe_intermediate_size * moe.num_shared_experts
        self.shared = SwiGLU(config.hidden_size, shared) if shared else None

    def load(self, weights: Weights, prefix: str) -> None:
        self.router.load(weights, prefix + "gate.")
        self.experts.load(weights, prefix + "experts.")
        if self.shared is not None:
            self.shared.load(weights, prefix + "shared_experts.")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ids, weights = self.router(x)
        out = self.experts(x, ids, weights)
        return out if self.shared is None else out + self.shared(x)
