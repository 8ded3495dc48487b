"""DeepSeek-V4's compressed branches: window compressors (CSA, HCA) and the Lightning Indexer.

A compressor turns every window of `rate` tokens into one key (= value) entry: per token a
projection C = x W_kv and gate logits Z = x W_gate; the entry is RMSNorm(sum_j softmax_j(Z_j +
B_j) * C_j) over the window's slots (B: a learned bias per slot), rotated by the "compress"
rotary at the window's first position. HCA pools its own window. CSA projects two series of
width D: entry w pools channels [:D] of window w-1 together with channels [D:] of window w
(2 * rate slots; window 0's missing half has weight 0), so its windows overlap by half.

Entry w summarizes positions up to w * rate + rate - 1, so a query at position p may see
entries w < (p + 1) // rate (`visible_entries`). In CSA layers the Lightning Indexer picks,
per query, the `index_topk` visible entries with the highest score
sum_h w_h(x) * ReLU(q_h . k_s) over its own compressed keys (an index-width compressor).
The state these read and extend is a `CompressorState` (deepseek_v4_cache.py).
"""

from __future__ import annotations

import torch
from torch import nn

from deepinfer.model.deepseek_v4_cache import CompressorState
from deepinfer.model.deepseek_v4_config import DeepseekV4Config
from deepinfer.model.deepseek_v4_ops import RopeTable, norm, rotate
from deepinfer.model.layers import Linear, Weights, frozen


class Compressor(nn.Module):
    """One compressor branch: entries of width `dim` every `rate` tokens (overlapping for CSA)."""

    def __init__(self, config: DeepseekV4Config, rate: int, dim: int, overlap: bool, rope: RopeTable) -> None:
        super().__init__()
        self.rate, self.dim, self.overlap, self.rope = rate, dim, overlap, rope
        self.eps = config.rms_norm_eps
        self.width = 2 * dim if overlap else dim
        # kv and gate projections fused into one matmul: [T, 2 * width].
        self.proj = Linear(config.hidden_size, {"kv_proj": self.width, "gate_proj": self.width})

    def load(self, weights: Weights, prefix: str) -> None:
        self.proj.load(weights, prefix)
        # transformers keeps the slot bias and the norm in float32.
        self.position_bias = frozen(weights.take(prefix + "position_bias", (self.rate, self.width),
                                                 dtype=torch.float32))
        self.norm_weight = frozen(weights.take(prefix + "kv_norm.weight", (self.dim,), dtype=torch.float32))

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x [T, hidden] -> kv, gate [T, width]."""
        return self.proj(x).split(self.width, dim=-1)

    def update(self, state: CompressorState, kv: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        """Append one sequence's new projections [n, width]; returns all its entries [E, dim]."""
        first = state.num_entries
        state.append(kv, gate)
        complete = state.pending_end // self.rate
        if complete > first:
            with_previous = self.overlap and first > 0
            lo = first - 1 if with_previous else first
            window_kv, window_gate = state.windows(lo, complete - lo)  # [n_w (+1), rate, width]
            state.add_entries(self._pool(window_kv, window_gate, with_previous, first))
        return state.entries

    def _pool(self, kv: torch.Tensor, gate: torch.Tensor, with_previous: bool, first: int) -> torch.Tensor:
        """Windows' projections [n, rate, width] -> entries [n', dim] for windows first, first + 1, ...

        With `with_previous`, kv/gate start one window early (CSA's overlap source) and n' = n - 1.
        """
        gate = gate + self.position_bias  # float32 from here, as transformers adds a float32 bias
        if self.overlap:
            kv, gate = self._overlap_slots(kv, gate, with_previous)  # [n', 2 * rate, dim]
        weights = torch.softmax(gate, dim=1, dtype=torch.float32).to(kv.dtype)
        pooled = norm((kv * weights).sum(dim=1), self.norm_weight, self.eps)  # [n', dim]
        positions = torch.arange(first, first + pooled.shape[0], device=pooled.device) * self.rate
        cos, sin = self.rope.cos_sin(positions, pooled.dtype)
        return rotate(pooled, cos, sin)

    def _overlap_slots(self, kv: torch.Tensor, gate: torch.Tensor,
                       with_previous: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """CSA: slots of entry w = channels [:dim] of window w-1, then channels [dim:] of window w."""
        d = self.dim
        early_kv, early_gate = kv[..., :d], gate[..., :d]  # [n, rate, dim]: feeds the next window's entry
        late_kv, late_gate = kv[..., d:], gate[..., d:]  # feeds its own window's entry
        if with_previous:
            early_kv, early_gate, late_kv, late_gate = early_kv[:-1], early_gate[:-1], late_kv[1:], late_gate[1:]
        else:  # window 0 has no predecessor: zero values with weight 0
            early_kv = torch.cat([torch.zeros_like(early_kv[:1]), early_kv[:-1]])
            early_gate = torch.cat([torch.full_like(early_gate[:1], float("-inf")), early_gate[:-1]])
        return torch.cat([early_kv, late_kv], dim=1), torch.cat([early_gate, late_gate], dim=1)


def visible_entries(num_entries: int, positions: torch.Tensor, rate: int) -> torch.Tensor:
    """Which entries each query may see: bool [n, E], entry w for positions p with w < (p + 1) // rate."""
    limit = (positions + 1) // rate  # [n]
    return torch.arange(num_entries, device=positions.device)[None, :] < limit[:, None]


class LightningIndexer(nn.Module):
    """Chooses the compressed entries each query of a CSA layer attends (at most index_topk)."""

    def __init__(self, config: DeepseekV4Config, rate: int, rope: RopeTable) -> None:
        super().__init__()
        self.rate, self.rope = rate, rope
        self.heads, self.dim, self.topk = config.index_heads, config.index_head_dim, config.index_topk
        self.compressor = Compressor(config, rate, self.dim, overlap=True, rope=rope)
        self.q_b = Linear(config.q_lora_rank, {"q_b_proj": self.heads * self.dim})
        self.head_weights = Linear(config.hidden_size, {"scorer.weights_proj": self.heads})
        self.score_scale, self.head_weight_scale = self.dim ** -0.5, self.heads ** -0.5

    def load(self, weights: Weights, prefix: str) -> None:
        self.compressor.load(weights, prefix)
        self.q_b.load(weights, prefix)
        self.head_weights.load(weights, prefix)

    def queries(self, q_residual: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """q_residual [T, q_lora_rank] -> rotated index queries [T, heads, dim]."""
        q = self.q_b(q_residual).view(q_residual.shape[0], self.heads, self.dim)
        return rotate(q, cos[:, None], sin[:, None])

    def query_weights(self, x: torch.Tensor) -> torch.Tensor:
        """x [T, hidden] -> float32 per-head weights of the score [T, heads]."""
        return self.head_weights(x).float() * self.head_weight_scale

    def select(self, queries: torch.Tensor, query_weights: torch.Tensor, keys: torch.Tensor,
               positions: torch.Tensor) -> torch.Tensor:
        """One sequence: queries [n, heads, dim], weights [n, heads], keys [E, dim] -> chosen bool [n, E]."""
        num_entries = keys.shape[0]
        chosen = torch.zeros(queries.shape[0], num_entries, dtype=torch.bool, device=keys.device)
        if num_entries == 0:
            return chosen
        per_head = torch.relu(torch.matmul(queries.float(), keys.float().t())) * self.score_scale  # [n, H, E]
        scores = (per_head * query_weights[:, :, None]).sum(dim=1)  # [n, E]
        visible = visible_entries(num_entries, positions, self.rate)
        scores = scores.masked_fill(~visible, float("-inf"))
        top = scores.topk(min(self.topk, num_entries), dim=-1).indices  # [n, k]
        # Early queries see fewer than k entries: the rest of their top-k is invisible, drop it.
        return chosen.scatter_(1, top, visible.gather(1, top))
