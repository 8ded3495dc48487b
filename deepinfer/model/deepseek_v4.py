"""The DeepSeek-V4 decoder (`DeepseekV4ForCausalLM`), exact to transformers 5.x.

embeddings, copied into hc_mult hyper-connection streams -> per layer: V4 attention (sliding
window + CSA/HCA compressed entries, deepseek_v4_attention.py) and the MoE (hash or top-k
routing, deepseek_v4_moe.py), each entered and left through a hyper-connection -> the streams
collapsed (HyperHead) -> RMSNorm -> vocabulary logits.

Same forward contract as the other architectures (decoder.Model): flattened tokens of one or
more sequences, explicit positions, float32 logits. The cache is V4's own: a
`DeepseekV4Cache` per sequence (`model.new_cache()`), passed alone for one sequence or as a
`DeepseekV4Batch` of (cache, number of new tokens) runs in packed order. A forward pass
extends every cache it is given; an exception half-way leaves them unusable. The
multi-token-prediction layers a checkpoint may carry are not built (as in transformers).
"""

from __future__ import annotations

import torch
from torch import nn

from deepinfer.model.config import ModelConfig
from deepinfer.model.deepseek_v4_attention import V4Attention
from deepinfer.model.deepseek_v4_cache import DeepseekV4Batch, DeepseekV4Cache, StateLayout, state_layout
from deepinfer.model.deepseek_v4_config import SLIDING, DeepseekV4Config
from deepinfer.model.deepseek_v4_hyper import HyperConnection, HyperHead, mix_streams
from deepinfer.model.deepseek_v4_moe import V4MoE
from deepinfer.model.deepseek_v4_ops import RopeTable, norm
from deepinfer.model.deepseek_v4_weights import V4Weights
from deepinfer.model.layers import Embedding, Weights, frozen
from deepinfer.model.weights import TensorSource


class V4DecoderLayer(nn.Module):
    def __init__(self, config: DeepseekV4Config, layer: int, compress_rope: RopeTable, vocab_size: int) -> None:
        super().__init__()
        self.hidden, self.eps = config.hidden_size, config.rms_norm_eps
        self.attn_hc, self.ffn_hc = HyperConnection(config), HyperConnection(config)
        self.attn = V4Attention(config, layer, compress_rope)
        self.mlp = V4MoE(config, layer, vocab_size)

    def load(self, weights: Weights, prefix: str) -> None:
        f32 = torch.float32  # transformers keeps both norms in float32
        self.input_norm = frozen(weights.take(prefix + "input_layernorm.weight", (self.hidden,), dtype=f32))
        self.post_attention_norm = frozen(weights.take(prefix + "post_attention_layernorm.weight", (self.hidden,),
                                                       dtype=f32))
        self.attn_hc.load(weights, prefix + "attn_hc.")
        self.ffn_hc.load(weights, prefix + "ffn_hc.")
        self.attn.load(weights, prefix + "self_attn.")
        self.mlp.load(weights, prefix + "mlp.")

    def forward(self, h: torch.Tensor, input_ids: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                positions: torch.Tensor, batch: DeepseekV4Batch) -> torch.Tensor:
        """h [T, hc_mult, hidden] -> the same shape."""
        x, post, comb = self.attn_hc(h)
        out = self.attn(norm(x, self.input_norm, self.eps), cos, sin, positions, batch)
        h = mix_streams(h, out, post, comb)
        x, post, comb = self.ffn_hc(h)
        return mix_streams(h, self.mlp(norm(x, self.post_attention_norm, self.eps), input_ids), post, comb)


class DeepseekV4Model(nn.Module):
    """forward(input_ids [T], positions [T], cache, logits_indices [N] | None) -> float32 [N or T, vocab]."""

    def __init__(self, config: ModelConfig, dtype: torch.dtype = torch.float32,
                 device: torch.device | str = "cpu") -> None:
        super().__init__()
        if config.deepseek_v4 is None:
            raise ValueError(f"{config.architecture} is not a DeepSeek-V4 config")
        self.config, self.v4 = config, config.deepseek_v4
        self.dtype, self.device = dtype, torch.device(device)
        self.layout = state_layout(self.v4)
        self.main_rope = RopeTable(self.v4.main_rope, self.device)
        self.compress_rope = RopeTable(self.v4.compress_rope, self.device)
        self.embedding = Embedding(config.vocab_size, config.hidden_size, config.tie_word_embeddings)
        self.layers = nn.ModuleList(V4DecoderLayer(self.v4, i, self.compress_rope, config.vocab_size)
                                    for i in range(self.v4.num_layers))
        self.head = HyperHead(self.v4)

    def load(self, source: TensorSource) -> None:
        """Take every tensor from `source`, under whichever V4 naming it uses (deepseek_v4_weights.py)."""
        weights = V4Weights(source)
        self.embedding.load(weights, "model.embed_tokens.weight", "lm_head.weight")
        for i, layer in enumerate(self.layers):
            layer.load(weights, f"model.layers.{i}.")
        self.head.load(weights, "model.hc_head.")
        self.norm = frozen(weights.take("model.norm.weight", (self.config.hidden_size,), dtype=torch.float32))

    def new_cache(self, max_rollback: int = 0) -> DeepseekV4Cache:
        """An empty decode state for one sequence; `truncate` can later undo up to `max_rollback` tokens."""
        return DeepseekV4Cache(self.v4, self.dtype, self.device, max_rollback)

    def state_layout(self) -> StateLayout:
        """What a sequence's decode state holds per layer, for storage kept outside the model (paged)."""
        return self.layout

    @torch.no_grad()
    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, cache: DeepseekV4Cache | DeepseekV4Batch,
                logits_indices: torch.Tensor | None = None) -> torch.Tensor:
        batch = self._batch(input_ids, positions, cache)
        h = self.embedding.embed_tokens(input_ids)  # [T, hidden]
        h = h[:, None, :].expand(-1, self.v4.hc_mult, -1).contiguous()  # [T, hc_mult, hidden]
        main = self.main_rope.cos_sin(positions, h.dtype)  # [T, rope_dim / 2] each
        compress = self.compress_rope.cos_sin(positions, h.dtype)
        for kind, layer in zip(self.v4.layer_types, self.layers):
            cos, sin = main if kind == SLIDING else compress
            h = layer(h, input_ids, cos, sin, positions, batch)
        batch.commit()
        if logits_indices is not None:
            h = h.index_select(0, logits_indices)  # [N, hc_mult, hidden]: the rest is per row
        return self.embedding.logits(norm(self.head(h), self.norm, self.v4.rms_norm_eps))

    def _batch(self, input_ids: torch.Tensor, positions: torch.Tensor,
               cache: DeepseekV4Cache | DeepseekV4Batch) -> DeepseekV4Batch:
        """The packed runs of this forward pass, checked against the tokens and positions given."""
        if isinstance(cache, DeepseekV4Cache):
            cache = DeepseekV4Batch([(cache, input_ids.shape[0])])
        if not all(hasattr(cache, name) for name in ("segments", "num_tokens", "commit")):
            raise TypeError(f"DeepSeek-V4 keeps its own decode state: pass model.new_cache(), a DeepseekV4Batch "
                            f"of them or a paged batch of the same interface, not a {type(cache).__name__}")
        if input_ids.dim() != 1 or positions.shape != input_ids.shape or cache.num_tokens != input_ids.shape[0]:
            raise ValueError(f"input_ids {tuple(input_ids.shape)} and positions {tuple(positions.shape)} must be "
                             f"[T] with T = {cache.num_tokens}, the new tokens of the batch's sequences")
        starts = positions[[s.start for s in cache.segments]].tolist()
        for segment, start in zip(cache.segments, starts):
            if segment.cache.layout != self.layout:
                raise ValueError("a cache made for another model was passed to this DeepSeek-V4 model")
            if start != segment.past:
                raise ValueError(f"a sequence with {segment.past} cached tokens continues at position "
                                 f"{segment.past}, not {start}")
        return cache
