import random

import pytest
import torch

from deepinfer.kvcache import BlockManager, BlockTable, KVPool, PagedKVCache, SeqSlice
from deepinfer.kvcache import native_decode
from deepinfer.kvcache.paged import LayerShape
from deepinfer.model.kv import causal_attention

H, HKV, DK, DV, BS = 6, 2, 16, 8, 4


@pytest.fixture(autouse=True, params=["torch", "native"])
def decode_path(request, monkeypatch):
    """Every test runs on the PyTorch plans (batched.py with decode.py and cascade.py; invariant.py)
    and on the native kernel (native_decode.py's NativePlan, every row), where it builds."""
    if request.param == "torch":
        monkeypatch.setenv("DEEPINFER_NATIVE", "0")
    elif not native_decode.fast(torch.float32, DK, DK):
        pytest.skip("the native decode kernel does not build here with its vectorized path")
    return request.param


def make(num_blocks=64):
    shapes = [LayerShape((HKV, DK), (HKV, DV))]
    return KVPool(shapes, num_blocks, BS, torch.float32), BlockManager(num_blocks, BS)


def run_step(pool, bm, seqs, qkv, invariant, window=None):
    """seqs: list of (table, num_cached, num_new); qkv: list of (q, k, v) for the new tokens."""
    slices = []
    for table, cached, new in seqs:
        assert bm.grow(table, cached + new)
        slices.append(SeqSlice(table.block_ids, cached, new))
    cache = PagedKVCache(pool, slices, invariant=invariant)
    q = torch.cat([x[0] for x in qkv]); k = torch.cat([x[1] for x in qkv]); v = torch.cat([x[2] for x in qkv])
    return cache.attend(0, q, k, v, scale=0.25, sliding_window=window)


def rand_seq(n, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, H, DK, generator=g), torch.randn(n, HKV, DK, generator=g), torch.randn(n, HKV, DV, generator=g)


@pytest.mark.parametrize("invariant", [True, False])
@pytest.mark.parametrize("window", [None, 5])
def test_matches_dense_attention_for_mixed_batch(invariant, window):
    pool, bm = make()
    lengths = [13, 1, 30]
    data = [rand_seq(n, i) for i, n in enumerate(lengths)]
    tables = [BlockTable() for _ in lengths]
    # first pass: prefill the first 10 tokens (or all) of each; second pass: the rest
    split = [min(10, n - 1) for n in lengths]
    run_step(pool, bm, [(t, 0, s) for t, s in zip(tables, split)],
             [(q[:s], k[:s], v[:s]) for (q, k, v), s in zip(data, split)], invariant, window)
    out = run_step(pool, bm, [(t, s, n - s) for t, s, n in zip(tables, split, lengths)],
                   [(q[s:], k[s:], v[s:]) for (q, k, v), s in zip(data, split)], invariant, window)
    offset = 0
    for (q, k, v), s, n in zip(data, split, lengths):
        ref = causal_attention(q[s:], k, v, s, scale=0.25, sliding_window=window)
        torch.testing.assert_close(out[offset:offset + n - s], ref, rtol=1e-5, atol=1e-5)
        offset += n - s


def test_invariant_mode_is_bitwise_independent_of_batch_and_chunking():
    q, k, v = rand_seq(37, 0)
    # alone, one prefill
    pool, bm = make()
    alone = run_step(pool, bm, [(BlockTable(), 0, 37)], [(q, k, v)], True)
    # token by token (decode), inside batches of random other sequences
    rng = random.Random(0)
    pool, bm = make(256)
    table, pieces, pos = BlockTable(), [], 0
    while pos < 37:
        n = rng.choice([1, 1, 3, 7])
        n = min(n, 37 - pos)
        others = [(BlockTable(), 0, rng.randint(1, 20)) for _ in range(rng.randint(0, 4))]
        data = [rand_seq(o[2], rng.randint(1, 10**6)) for o in others]
        seqs = others + [(table, pos, n)]
        out = run_step(pool, bm, seqs, data + [(q[pos:pos + n], k[pos:pos + n], v[pos:pos + n])], True)
        pieces.append(out[-n:])
        for o in others:
            bm.free(o[0])
        pos += n
    assert torch.equal(torch.cat(pieces), alone)


@pytest.mark.parametrize("window", [None, 5])
@pytest.mark.parametrize("copies", [1, 2])
def test_decodes_sharing_prefix_blocks_match_dense_attention(window, copies, decode_path):
    """Decodes whose tables share leading blocks (prefix-cache hits) take the cascade path
    (which needs equal key and value head sizes, unlike the MLA-like shapes above)."""
    pool = KVPool([LayerShape((HKV, DK), (HKV, DK))], 64, BS, torch.float32)

    def rand_seq(n, seed):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(n, H, DK, generator=g), torch.randn(n, HKV, DK, generator=g),
                torch.randn(n, HKV, DK, generator=g))

    shared, prefix = [0, 1, 2, 3], 16                     # 4 blocks of BS=4 tokens
    pq, pk, pv = rand_seq(prefix, 99)
    # copies=2: the last sequence computed the same prefix into its own blocks (admitted in the same step)
    prefixes = [shared, shared, shared if copies == 1 else [40, 41, 42, 43]]
    for blocks in {tuple(b) for b in prefixes}:
        PagedKVCache(pool, [SeqSlice(list(blocks), 0, prefix)], invariant=False).attend(0, pq, pk, pv, scale=0.25)
    lengths, new = [5, 9, 3], [1, 3, 1]                     # own tokens after the prefix; last ones are new
    own_blocks = [[10, 11, 12], [20, 21, 22], [30, 31]]
    data = [rand_seq(n, 7 + i) for i, n in enumerate(lengths)]
    for start, blocks, (q, k, v), n, m in zip(prefixes, own_blocks, data, lengths, new):   # earlier own tokens
        PagedKVCache(pool, [SeqSlice(start + blocks, prefix, n - m)], invariant=False).attend(
            0, q[:n - m], k[:n - m], v[:n - m], scale=0.25)
    slices = [SeqSlice(a + b, prefix + n - m, m) for a, b, n, m in zip(prefixes, own_blocks, lengths, new)]
    cache = PagedKVCache(pool, slices, invariant=False)
    if decode_path == "torch":
        assert cache.plan.decodes.shared.blocks == 4 and len(cache.plan.decodes.shared.classes) == copies
    out = cache.attend(0, torch.cat([q[n - m:] for (q, _, _), n, m in zip(data, lengths, new)]),
                       torch.cat([k[n - m:] for (_, k, _), n, m in zip(data, lengths, new)]),
                       torch.cat([v[n - m:] for (_, _, v), n, m in zip(data, lengths, new)]),
                       scale=0.25, sliding_window=window)
    offset = 0
    for (q, k, v), n, m in zip(data, lengths, new):
        ref = causal_attention(q[n - m:], torch.cat([pk, k]), torch.cat([pv, v]), prefix + n - m,
                               scale=0.25, sliding_window=window)
        torch.testing.assert_close(out[offset:offset + m], ref, rtol=1e-5, atol=1e-5)
        offset += m


@pytest.mark.parametrize("seed", [0, 1])
def test_bucketed_decodes_with_shared_prefix_and_a_prefill_chunk_match_dense_attention(seed, decode_path):
    """Decodes with 1, 2 or 5 new tokens (three buckets, listed out of order) reading a shared prefix,
    next to a prefill chunk in the same forward pass: every row equals dense causal attention."""
    rng = random.Random(seed)
    pool = KVPool([LayerShape((HKV, DK), (HKV, DK))], 128, BS, torch.float32)
    g = torch.Generator().manual_seed(seed)

    def rand(n):
        return torch.randn(n, H, DK, generator=g), torch.randn(n, HKV, DK, generator=g), torch.randn(n, HKV, DK, generator=g)

    shared, prefix = [0, 1, 2, 3], 16
    pq, pk, pv = rand(prefix)
    PagedKVCache(pool, [SeqSlice(shared, 0, prefix)], invariant=False).attend(0, pq, pk, pv, scale=0.25)
    news = [rng.choice([1, 2, 5]) for _ in range(6)] + [11]          # the last one is a prefill chunk
    seqs, data, next_block = [], [], 10
    for i, m in enumerate(news):
        n = rng.randint(m, m + 9)                                      # own tokens after the prefix
        blocks = list(range(next_block, next_block + -(-n // BS)))
        next_block += len(blocks)
        q, k, v = rand(n)
        table = shared + blocks if i < len(news) - 1 else [50, 51, 52, 53] + blocks  # prefill: own prefix copy
        if i == len(news) - 1:
            PagedKVCache(pool, [SeqSlice(table, 0, prefix)], invariant=False).attend(0, pq, pk, pv, scale=0.25)
        if n > m:
            PagedKVCache(pool, [SeqSlice(table, prefix, n - m)], invariant=False).attend(
                0, q[:n - m], k[:n - m], v[:n - m], scale=0.25)
        seqs.append(SeqSlice(table, prefix + n - m, m))
        data.append((q, k, v, n, m))
    cache = PagedKVCache(pool, seqs, invariant=False)
    if decode_path == "torch":
        assert len(cache.plan.prefills) == 1 and cache.plan.decodes.shared is not None
    else:
        assert isinstance(cache.plan, native_decode.NativePlan)
    out = cache.attend(0, torch.cat([q[n - m:] for q, _, _, n, m in data]),
                       torch.cat([k[n - m:] for _, k, _, n, m in data]),
                       torch.cat([v[n - m:] for _, _, v, n, m in data]), scale=0.25)
    offset = 0
    for q, k, v, n, m in data:
        ref = causal_attention(q[n - m:], torch.cat([pk, k]), torch.cat([pv, v]), prefix + n - m, scale=0.25)
        torch.testing.assert_close(out[offset:offset + m], ref, rtol=1e-5, atol=1e-5)
        offset += m


def test_bfloat16_cpu_attention_inputs_widen_exactly():
    """bfloat16 prefill and shared-prefix attention run on float32 copies (faster CPU kernels):
    the copies hold the same values; float32 inputs pass through untouched."""
    from deepinfer.kvcache.cascade import widen
    q, k = torch.randn(2, 3, 4).to(torch.bfloat16), torch.randn(2, 3, 4).to(torch.bfloat16)
    wq, wk = widen(q, k)
    assert wq.dtype == wk.dtype == torch.float32 and torch.equal(wq.to(torch.bfloat16), q)
    f = torch.randn(2, 3)
    assert widen(f)[0] is f


def test_bfloat16_paged_attention_stays_close_to_float32():
    """A bfloat16 pool and queries (prefill chunk + decodes sharing prefix blocks) give the float32
    result up to bfloat16 rounding, in bfloat16."""
    torch.manual_seed(3)
    outs = {}
    for dtype in (torch.float32, torch.bfloat16):
        pool = KVPool([LayerShape((HKV, DK), (HKV, DV))], 64, BS, dtype)
        bm = BlockManager(64, BS)
        tables = [BlockTable(), BlockTable()]
        gen = torch.Generator().manual_seed(5)
        qkv = [(torch.randn(n, H, DK, generator=gen).to(dtype), torch.randn(n, HKV, DK, generator=gen).to(dtype),
                torch.randn(n, HKV, DV, generator=gen).to(dtype)) for n in (9, 7)]
        outs[dtype] = run_step(pool, bm, [(tables[0], 0, 9), (tables[1], 0, 7)], qkv, invariant=False)
    assert outs[torch.bfloat16].dtype == torch.bfloat16
    torch.testing.assert_close(outs[torch.bfloat16].float(), outs[torch.float32], atol=0.05, rtol=0.05)
