"""DenseKVCache: growth past its first buffer, rollback, and the reference attention math."""

from __future__ import annotations

import math

import torch

from deepinfer.model import load_model
from deepinfer.model.kv import DenseKVCache, causal_attention

LONG = [(7 * i + 3) % 96 for i in range(40)]


def test_decode_past_buffer_growth_and_rollback_match_prefill(reference_model):
    _, directory = reference_model("mistral-sliding")
    model = load_model(directory)
    layers = model.config.num_layers
    full = model.forward(torch.tensor(LONG), torch.arange(len(LONG)), DenseKVCache(layers))
    cache = DenseKVCache(layers)
    rows = [model.forward(torch.tensor(LONG[:3]), torch.arange(3), cache)]
    for i in range(3, len(LONG)):  # crosses the 16- and 32-token buffer sizes
        rows.append(model.forward(torch.tensor([LONG[i]]), torch.tensor([i]), cache))
    torch.testing.assert_close(torch.cat(rows), full, atol=1e-5, rtol=0)
    cache.truncate(30)
    assert cache.num_tokens == 30
    again = model.forward(torch.tensor(LONG[30:]), torch.arange(30, len(LONG)), cache)
    torch.testing.assert_close(again, full[30:], atol=1e-5, rtol=0)


def naive_attention(q, k, v, past, scale, window):
    """Per query head, per query token, straight from the definition."""
    T, H, _ = q.shape
    group = H // k.shape[1]
    out = torch.zeros(T, H, v.shape[-1], dtype=torch.float64)
    for t in range(T):
        pos = past + t
        keys = [s for s in range(k.shape[0]) if s <= pos and (window is None or s > pos - window)]
        for h in range(H):
            kv = h // group
            scores = torch.tensor([float(q[t, h].double() @ k[s, kv].double()) * scale for s in keys])
            probs = torch.softmax(scores, dim=0)
            out[t, h] = sum(p * v[s, kv].double() for p, s in zip(probs, keys))
    return out


def test_causal_attention_matches_definition_with_gqa_and_windows():
    gen = torch.Generator().manual_seed(0)
    for T, S, H, Hkv, window in [(1, 9, 6, 2, None), (1, 9, 6, 2, 4), (4, 10, 4, 1, 3), (5, 5, 4, 4, None)]:
        q, k = torch.randn(T, H, 8, generator=gen), torch.randn(S, Hkv, 8, generator=gen)
        v = torch.randn(S, Hkv, 6, generator=gen)
        got = causal_attention(q, k, v, S - T, scale=1 / math.sqrt(8), sliding_window=window)
        expected = naive_attention(q, k, v, S - T, 1 / math.sqrt(8), window)
        torch.testing.assert_close(got.double(), expected, atol=1e-5, rtol=0)
