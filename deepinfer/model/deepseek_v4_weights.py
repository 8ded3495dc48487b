"""DeepSeek-V4 tensor names: every naming a V4 checkpoint comes with, mapped onto one.

transformers 5.x loads V4 from DeepSeek's original names (`layers.0.attn.wq_a.weight`,
`embed.weight`, `layers.0.ffn.experts.3.w1.weight`, ...) and saves them back only partly
renamed (`model.layers.0.attn.wq_a.weight` next to `model.embed_tokens.weight`). The V4
modules ask for transformers' in-memory names (`model.layers.0.self_attn.q_a_proj.weight`);
`V4Weights` finds each under whichever name the checkpoint uses. Per-expert tensors keep one
name per expert (`mlp.experts.3.gate_proj.weight`; w1 = gate, w3 = up, w2 = down).
Multi-token-prediction tensors (`mtp.*`) are not used: transformers does not build those
layers either, and the loader ignores them.
"""

from __future__ import annotations

import re

import torch

from deepinfer.errors import ModelLoadError
from deepinfer.model.weights import TensorSource

# (pattern, replacement) applied in order to a name without its "model." prefix; the names
# transformers uses in memory pass through unchanged.
_RULES = [(re.compile(p), r) for p, r in [
    (r"^embed\.", "embed_tokens."),
    (r"^head\.weight$", "lm_head.weight"),
    (r"^hc_head_(fn|base|scale)$", r"hc_head.hc_\1"),
    (r"^(layers\.\d+)\.attn\.", r"\1.self_attn."),
    (r"^(layers\.\d+)\.ffn\.", r"\1.mlp."),
    (r"\.attn_norm\.", ".input_layernorm."),
    (r"\.ffn_norm\.", ".post_attention_layernorm."),
    (r"\.hc_(attn|ffn)_(fn|base|scale)$", r".\1_hc.\2"),
    (r"\.self_attn\.attn_sink$", ".self_attn.sinks"),
    (r"\.self_attn\.indexer\.compressor\.", ".self_attn.compressor.indexer."),
    (r"\.self_attn\.indexer\.wq_b\.", ".self_attn.compressor.indexer.q_b_proj."),
    (r"\.self_attn\.indexer\.weights_proj\.", ".self_attn.compressor.indexer.scorer.weights_proj."),
    (r"\.ape$", ".position_bias"),
    (r"(\.self_attn(?:\.compressor(?:\.indexer)?)?)\.norm\.weight$", r"\1.kv_norm.weight"),
    (r"\.wq_a\.", ".q_a_proj."),
    (r"\.q_norm\.", ".q_a_norm."),
    (r"\.wq_b\.", ".q_b_proj."),
    (r"\.wkv\.", ".kv_proj."),
    (r"\.wgate\.", ".gate_proj."),
    (r"\.wo_a\.", ".o_a_proj."),
    (r"\.wo_b\.", ".o_b_proj."),
    (r"\.gate\.bias$", ".gate.e_score_correction_bias"),
    (r"\.(shared_experts|experts\.\d+)\.w1\.", r".\1.gate_proj."),
    (r"\.(shared_experts|experts\.\d+)\.w2\.", r".\1.down_proj."),
    (r"\.(shared_experts|experts\.\d+)\.w3\.", r".\1.up_proj."),
]]


def canonical_name(stored: str) -> str:
    """The transformers in-memory name of a stored V4 tensor name."""
    name = stored.removeprefix("model.")
    for pattern, replacement in _RULES:
        name = pattern.sub(replacement, name)
    return name if name == "lm_head.weight" else "model." + name


class V4Weights:
    """A `Weights` view of a checkpoint that answers to canonical V4 names."""

    def __init__(self, source: TensorSource) -> None:
        self.source, self.dtype = source, source.dtype
        self.stored: dict[str, str] = {}
        for name in source.names():
            canonical = canonical_name(name)
            if canonical in self.stored:
                raise ModelLoadError(f"{source.where}: tensors '{self.stored[canonical]}' and '{name}' are the same "
                                     f"weight ({canonical}) under two names. The checkpoint is inconsistent.")
            self.stored[canonical] = name

    def has(self, name: str) -> bool:
        return name in self.stored

    def take(self, name: str, shape: tuple[int, ...], dtype: torch.dtype | None = None) -> torch.Tensor:
        return self.source.take(self.stored.get(name, name), shape, dtype)

    def take_quantized(self, name: str, shape: tuple[int, ...]):
        """The stored tensor as a block-quantized weight where the source holds one, else None."""
        return self.source.take_quantized(self.stored.get(name, name), shape)
