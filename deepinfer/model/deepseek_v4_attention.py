"""DeepSeek-V4 attention: shared-K=V multi-query attention over a sliding window plus compressed entries.

As transformers 5.x computes it, per layer:
  q = RMSNorm_unit(q_b(RMSNorm(q_a(x))))  [T, H, D], rotary on each head's trailing rope_dim
  kv = RMSNorm(kv_proj(x))                [T, D], the one key head, also the value, rotated too
  keys of a query at position p: the sliding window (p - window, p] of its own sequence, plus
  (HCA) every visible compressed entry or (CSA) the visible entries its Lightning Indexer chose
  softmax over those scores and a learned per-head sink logit (the sink takes probability, adds nothing)
  out = probs @ keys, then the rotary of the output's rope channels undone at the query's position
  o_b(grouped o_a(out)): heads split into o_groups, each projected alone, then mixed.
Sliding layers use the "main" rotary, CSA/HCA layers (and their compressors) the "compress" one.
Per-sequence state (window keys, entries) lives in the sequence's DeepseekV4Cache.
"""

from __future__ import annotations

import torch
from torch import nn

from deepinfer.model.deepseek_v4_cache import DeepseekV4Batch, LayerState, Segment
from deepinfer.model.deepseek_v4_compressor import Compressor, LightningIndexer, visible_entries
from deepinfer.model.deepseek_v4_config import CSA, SLIDING, DeepseekV4Config
from deepinfer.model.deepseek_v4_ops import RopeTable, grouped_linear, norm, rotate, unit_norm
from deepinfer.model.layers import Linear, Weights, frozen, gemm_weight


class V4Attention(nn.Module):
    def __init__(self, config: DeepseekV4Config, layer: int, compress_rope: RopeTable) -> None:
        super().__init__()
        c = config
        self.layer, self.eps, self.window = layer, c.rms_norm_eps, c.sliding_window
        self.heads, self.head_dim, self.scale = c.num_heads, c.head_dim, c.head_dim ** -0.5
        self.groups, self.group_rank = c.o_groups, c.o_lora_rank
        self.q_lora_rank = c.q_lora_rank
        self.q_a = Linear(c.hidden_size, {"q_a_proj": c.q_lora_rank})
        self.q_b = Linear(c.q_lora_rank, {"q_b_proj": c.num_heads * c.head_dim})
        self.kv = Linear(c.hidden_size, {"kv_proj": c.head_dim})
        self.o_b = Linear(c.o_groups * c.o_lora_rank, {"o_b_proj": c.hidden_size})
        kind, self.rate = c.layer_types[layer], c.compress_rates[layer]
        self.compressor = None if kind == SLIDING else Compressor(c, self.rate, c.head_dim, kind == CSA,
                                                                 compress_rope)
        self.indexer = LightningIndexer(c, self.rate, compress_rope) if kind == CSA else None

    def load(self, weights: Weights, prefix: str) -> None:
        h, d = self.heads, self.head_dim
        self.q_a.load(weights, prefix)
        self.q_b.load(weights, prefix)
        self.kv.load(weights, prefix)
        self.o_b.load(weights, prefix)
        f32 = torch.float32  # transformers keeps these in float32
        self.q_norm = frozen(weights.take(prefix + "q_a_norm.weight", (self.q_lora_rank,), dtype=f32))
        self.kv_norm = frozen(weights.take(prefix + "kv_norm.weight", (d,), dtype=f32))
        self.sinks = frozen(weights.take(prefix + "sinks", (h,), dtype=f32))
        o_a = weights.take(prefix + "o_a_proj.weight", (self.groups * self.group_rank, h * d // self.groups))
        self.o_a = frozen(gemm_weight(o_a.view(self.groups, self.group_rank, -1)))  # [G, rank, in_g]
        if self.compressor is not None:
            self.compressor.load(weights, prefix + "compressor.")
        if self.indexer is not None:
            self.indexer.load(weights, prefix + "compressor.indexer.")

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor,
                batch: DeepseekV4Batch) -> torch.Tensor:
        """x [T, hidden], cos/sin [T, rope_dim / 2] of this layer's rotary, positions [T] -> [T, hidden]."""
        num_tokens = x.shape[0]
        q_residual = norm(self.q_a(x), self.q_norm, self.eps)  # [T, q_lora_rank]
        q = unit_norm(self.q_b(q_residual).view(num_tokens, self.heads, self.head_dim), self.eps)
        q = rotate(q, cos[:, None], sin[:, None])  # [T, H, D]
        kv = rotate(norm(self.kv(x), self.kv_norm, self.eps), cos, sin)  # [T, D]
        branches = self._branch_inputs(x, q_residual, cos, sin)
        out = torch.empty_like(q)
        for segment in batch.segments:
            rows = slice(segment.start, segment.start + segment.num_new)
            state = segment.cache.layers[self.layer]
            keys, seen = self._sequence_keys(segment, state, kv[rows], positions[rows],
                                             {name: t[rows] for name, t in branches.items()})
            out[rows] = self._attend(q[rows], keys, seen)
        out = rotate(out, cos[:, None], -sin[:, None])  # undo the values' rotary at the query position
        grouped = grouped_linear(out.reshape(num_tokens, self.groups, -1), self.o_a)  # [T, G, rank]
        return self.o_b(grouped.reshape(num_tokens, -1))

    def _branch_inputs(self, x, q_residual, cos, sin) -> dict[str, torch.Tensor]:
        """Projections of the compressed branches for all tokens at once (rows split per sequence later)."""
        inputs: dict[str, torch.Tensor] = {}
        if self.compressor is not None:
            inputs["kv"], inputs["gate"] = self.compressor.project(x)  # [T, width] each
        if self.indexer is not None:
            inputs["index_kv"], inputs["index_gate"] = self.indexer.compressor.project(x)
            inputs["index_q"] = self.indexer.queries(q_residual, cos, sin)  # [T, IH, Di]
            inputs["index_w"] = self.indexer.query_weights(x)  # [T, IH]
        return inputs

    def _sequence_keys(self, segment: Segment, state: LayerState, kv: torch.Tensor, positions: torch.Tensor,
                       branch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Extend one sequence's state by its new rows; returns its keys [S, D] and which of them
        each new query attends, bool [n, S] (window keys first, then compressed entries)."""
        window_keys = state.window.extend(kv)  # positions [end - S_w, end)
        end = segment.past + segment.num_new
        key_positions = torch.arange(end - window_keys.shape[0], end, device=kv.device)
        seen = ((key_positions[None, :] <= positions[:, None])
                & (key_positions[None, :] > positions[:, None] - self.window))  # [n, S_w]
        if self.compressor is None:
            return window_keys, seen
        entries = self.compressor.update(state.compressor, branch["kv"], branch["gate"])  # [E, D]
        if self.indexer is not None:
            index_keys = self.indexer.compressor.update(state.indexer, branch["index_kv"], branch["index_gate"])
            chosen = self.indexer.select(branch["index_q"], branch["index_w"], index_keys, positions)
        else:
            chosen = visible_entries(entries.shape[0], positions, self.rate)
        return torch.cat([window_keys, entries]), torch.cat([seen, chosen], dim=1)

    def _attend(self, q: torch.Tensor, keys: torch.Tensor, seen: torch.Tensor) -> torch.Tensor:
        """q [n, H, D], keys (= values) [S, D], seen bool [n, S] -> [n, H, D]."""
        heads, num_new = q.shape[1], q.shape[0]
        scores = torch.matmul(q.transpose(0, 1), keys.t()) * self.scale  # [H, n, S]
        scores = scores.float().masked_fill(~seen, float("-inf"))
        sinks = self.sinks.view(heads, 1, 1).expand(heads, num_new, 1)
        probs = torch.softmax(torch.cat([scores, sinks], dim=-1), dim=-1)[..., :-1]  # the sink is dropped
        return torch.matmul(probs.to(keys.dtype), keys).transpose(0, 1)  # [n, H, D]
