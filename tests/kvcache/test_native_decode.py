"""The native paged decode kernel against dense causal attention, on both of its code paths
(AVX-512 for head dims that are multiples of 16 where the CPU has it, portable C otherwise)."""

import random
import shutil

import pytest
import torch

from deepinfer.kvcache import SeqSlice
from deepinfer.kvcache.native_decode import NativeDecode, kernel
from deepinfer.model.kv import causal_attention

needs_kernel = pytest.mark.skipif(kernel() is None, reason="the native decode kernel does not build here")

# heads, kv heads, key dim, value dim, block size, KV dtype, sliding window
CASES = [
    (9, 3, 64, 64, 16, torch.float32, None),    # SmolLM2-135M's shapes
    (9, 3, 64, 64, 16, torch.bfloat16, None),
    (8, 2, 32, 16, 8, torch.float32, 7),        # key and value dims differ (MLA), blocks under 16 keys
    (4, 4, 48, 32, 32, torch.float32, None),    # two 16-key chunks per block
    (16, 1, 16, 16, 16, torch.bfloat16, 20),    # 16 query heads on one kv head
    (6, 2, 24, 8, 4, torch.float32, 5),         # dims not multiples of 16: the portable path
    (6, 3, 20, 12, 16, torch.bfloat16, None),
]


@needs_kernel
@pytest.mark.parametrize("heads,hkv,dk,dv,bs,dtype,window", CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_kernel_matches_dense_causal_attention(heads, hkv, dk, dv, bs, dtype, window, seed):
    rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
    num_blocks = 400
    k_pool = torch.randn(num_blocks * bs, hkv, dk, generator=gen).to(dtype)
    v_pool = torch.randn(num_blocks * bs, hkv, dv, generator=gen).to(dtype)
    free = list(range(1, num_blocks))
    rng.shuffle(free)
    members, offset = [], 1  # row 0 of the packed batch belongs to no decode: it must stay untouched
    for _ in range(rng.randint(1, 9)):
        cached, new = rng.choice([0, rng.randint(1, 70)]), rng.randint(1, 8)
        blocks = [free.pop() for _ in range(-(-(cached + new) // bs))]
        members.append((SeqSlice(blocks, cached, new), offset))
        offset += new + rng.randint(0, 2)                          # gaps: rows of other sequences
    q = torch.randn(offset, heads, dk, generator=gen)
    out = torch.full((offset, heads, dv), 7.0)
    scale = dk ** -0.5
    NativeDecode(members, bs).attend(q, k_pool, v_pool, out, scale=scale, window=window)
    written = torch.zeros(offset, dtype=torch.bool)
    for s, first in members:
        slots = torch.tensor([s.block_ids[p // bs] * bs + p % bs for p in range(s.total)])
        ref = causal_attention(q[first:first + s.num_new], k_pool[slots].float(), v_pool[slots].float(), s.num_cached,
                               scale=scale, sliding_window=window)
        torch.testing.assert_close(out[first:first + s.num_new], ref, rtol=2e-5, atol=2e-5)
        written[first:first + s.num_new] = True
    assert torch.all(out[~written] == 7.0)


@needs_kernel
@pytest.mark.parametrize("dim", [64, 24])                  # the AVX-512 and the portable path
def test_rows_depend_only_on_their_own_sequence(dim):
    """A sequence's rows are bitwise the same alone or among others (fixed order per row)."""
    gen, bs = torch.Generator().manual_seed(3), 16
    k_pool, v_pool = torch.randn(64 * bs, 3, dim, generator=gen), torch.randn(64 * bs, 3, dim, generator=gen)
    needle = SeqSlice([5, 9, 2], 40, 3)
    q = torch.randn(12, 9, dim, generator=gen)
    alone = torch.zeros(12, 9, dim)
    NativeDecode([(needle, 4)], bs).attend(q, k_pool, v_pool, alone, scale=0.125, window=None)
    crowd = torch.zeros(12, 9, dim)
    others = [(SeqSlice([7, 8], 20, 4), 0), (needle, 4), (SeqSlice([11, 12, 13], 35, 5), 7)]
    NativeDecode(others, bs).attend(q, k_pool, v_pool, crowd, scale=0.125, window=None)
    assert torch.equal(alone[4:7], crowd[4:7])


def test_kernel_builds_where_a_c_compiler_is_present():
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler")
    assert kernel() is not None


@needs_kernel
def test_out_of_range_arguments_raise_instead_of_reading_past_the_tensors():
    pool = torch.zeros(4 * 16, 3, 64)                             # 4 blocks of 16
    q, out = torch.zeros(4, 9, 64), torch.zeros(4, 9, 64)
    with pytest.raises(ValueError):                               # block 7 is past the pool
        NativeDecode([(SeqSlice([7], 3, 1), 0)], 16).attend(q, pool, pool, out, scale=1.0, window=None)
    with pytest.raises(ValueError):                               # 40 tokens need 3 blocks, not 1
        NativeDecode([(SeqSlice([1], 39, 1), 0)], 16)
    with pytest.raises(ValueError):                               # rows past q
        NativeDecode([(SeqSlice([1], 3, 2), 3)], 16).attend(q, pool, pool, out, scale=1.0, window=None)
