"""Manifold-constrained hyper-connections (mHC): DeepSeek-V4's residual of `hc_mult` streams.

The residual is h [T, N, D] (N = hc_mult streams). Before a block (attention or MoE), one
projection of the normalized, flattened streams gives per token
  pre [N]  = sigmoid(.) + eps          collapses the streams into the block's input
  post [N] = 2 sigmoid(.)              spreads the block's output over the streams
  comb [N, N] = softmax(.) + eps, made (nearly) doubly stochastic by Sinkhorn-Knopp
and the block's output y [T, D] becomes h' = post y + comb^T h. The final `HyperHead`
collapses the streams with its own `pre` weights. Everything is float32, as transformers
keeps these modules; only the mixes are rounded to the activation dtype.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from deepinfer.model.deepseek_v4_config import DeepseekV4Config
from deepinfer.model.deepseek_v4_ops import unit_norm
from deepinfer.model.layers import Weights, frozen


class HyperConnection(nn.Module):
    """The (pre, post, comb) mixing weights of one block and the collapse of its input."""

    def __init__(self, config: DeepseekV4Config) -> None:
        super().__init__()
        self.streams, self.hidden = config.hc_mult, config.hidden_size
        self.iters, self.hc_eps, self.norm_eps = config.hc_sinkhorn_iters, config.hc_eps, config.rms_norm_eps

    def load(self, weights: Weights, prefix: str) -> None:
        n = self.streams
        mixes = (2 + n) * n  # pre, post and comb
        f32 = torch.float32
        self.fn = frozen(weights.take(prefix + "fn", (mixes, n * self.hidden), dtype=f32))
        self.base = frozen(weights.take(prefix + "base", (mixes,), dtype=f32))
        self.scale = frozen(weights.take(prefix + "scale", (3,), dtype=f32))

    def forward(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """h [T, N, D] -> block input [T, D] (h's dtype), post [T, N] and comb [T, N, N] (float32)."""
        n = self.streams
        mix = F.linear(unit_norm(h.flatten(1).float(), self.norm_eps), self.fn)  # [T, (2 + N) N]
        pre_w, post_w, comb_w = mix.split([n, n, n * n], dim=-1)
        pre_b, post_b, comb_b = self.base.split([n, n, n * n])
        pre = torch.sigmoid(pre_w * self.scale[0] + pre_b) + self.hc_eps
        post = 2 * torch.sigmoid(post_w * self.scale[1] + post_b)
        comb = torch.softmax(comb_w.view(-1, n, n) * self.scale[2] + comb_b.view(n, n), dim=-1) + self.hc_eps
        comb = self._sinkhorn(comb)
        collapsed = (pre[..., None] * h).sum(dim=1).to(h.dtype)
        return collapsed, post, comb

    def _sinkhorn(self, comb: torch.Tensor) -> torch.Tensor:
        """Alternately normalize columns and rows (columns first and last), as the reference does."""
        comb = comb / (comb.sum(dim=-2, keepdim=True) + self.hc_eps)
        for _ in range(self.iters - 1):
            comb = comb / (comb.sum(dim=-1, keepdim=True) + self.hc_eps)
            comb = comb / (comb.sum(dim=-2, keepdim=True) + self.hc_eps)
        return comb


def mix_streams(h: torch.Tensor, block_out: torch.Tensor, post: torch.Tensor, comb: torch.Tensor) -> torch.Tensor:
    """h [T, N, D], block output [T, D] -> post * out + comb^T h [T, N, D] (stream k takes sum_j comb[j, k] h[j])."""
    dtype = h.dtype
    return post.to(dtype)[..., None] * block_out[:, None, :] + torch.matmul(comb.to(dtype).transpose(-1, -2), h)


class HyperHead(nn.Module):
    """Collapses the streams before the final norm: sum_n (sigmoid(.) + eps)_n h_n."""

    def __init__(self, config: DeepseekV4Config) -> None:
        super().__init__()
        self.streams, self.hidden = config.hc_mult, config.hidden_size
        self.hc_eps, self.norm_eps = config.hc_eps, config.rms_norm_eps

    def load(self, weights: Weights, prefix: str) -> None:
        n, f32 = self.streams, torch.float32
        self.fn = frozen(weights.take(prefix + "hc_fn", (n, n * self.hidden), dtype=f32))
        self.base = frozen(weights.take(prefix + "hc_base", (n,), dtype=f32))
        self.scale = frozen(weights.take(prefix + "hc_scale", (1,), dtype=f32))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """h [T, N, D] -> [T, D]."""
        mix = F.linear(unit_norm(h.flatten(1).float(), self.norm_eps), self.fn)  # [T, N]
        pre = torch.sigmoid(mix * self.scale + self.base) + self.hc_eps
        return (pre[..., None] * h).sum(dim=1).to(h.dtype)
