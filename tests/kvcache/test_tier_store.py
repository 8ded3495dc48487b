"""The KV tier's pieces on their own: the block format, the disk store's bound and LRU order."""

import os

import pytest
import torch

from deepinfer.errors import UserError
from deepinfer.kvcache.storage import HybridStorage, StorageConfig
from deepinfer.kvcache.tier import TierConfig
from deepinfer.kvcache.tier.disk import DiskStore
from deepinfer.kvcache.tier.format import BlockFormatError, BlockRecord, Expected, decode, encode


def _record(dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    k = [torch.randn(4, 2, 8, generator=g).to(dtype) for _ in range(3)]
    v = [torch.randn(4, 2, 6, generator=g).to(dtype) for _ in range(3)]
    return BlockRecord("ab" * 20, "cd" * 20, None, [5, 6, 7, 8], k, v)


def _expected(record, **changes):
    fields = dict(model=record.model, key=record.key, tokens=record.tokens, dtype=record.k[0].dtype,
                  k_shapes=[tuple(t.shape) for t in record.k], v_shapes=[tuple(t.shape) for t in record.v])
    return Expected(**(fields | changes))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_block_round_trips_bit_exact(dtype):
    record = _record(dtype)
    back = decode(encode(record), _expected(record))
    assert back.tokens == record.tokens and back.parent is None
    for a, b in zip(back.k + back.v, record.k + record.v):
        assert a.dtype == dtype and torch.equal(a, b)


def test_truncated_corrupt_and_foreign_blocks_are_refused():
    record = _record()
    data = encode(record)
    with pytest.raises(BlockFormatError, match="truncated|checksum"):
        decode(data[:len(data) // 2], _expected(record))
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x40
    with pytest.raises(BlockFormatError, match="checksum"):
        decode(bytes(flipped), _expected(record))
    with pytest.raises(BlockFormatError, match="magic"):
        decode(b"X" * len(data), _expected(record))
    with pytest.raises(BlockFormatError, match="model"):
        decode(data, _expected(record, model="ef" * 20))
    with pytest.raises(BlockFormatError, match="tokens"):
        decode(data, _expected(record, tokens=[5, 6, 7, 9]))
    with pytest.raises(BlockFormatError, match="dtype"):
        decode(data, _expected(record, dtype=torch.bfloat16))
    with pytest.raises(BlockFormatError, match="shape"):
        decode(data, _expected(record, k_shapes=[(4, 2, 4)] * 3))


def test_disk_store_keeps_its_bound_least_recently_used_out(tmp_path):
    store = DiskStore(tmp_path, "model", max_bytes=3000)
    for i in range(3):
        assert store.put(f"b{i}", bytes([i]) * 900)
    os.utime(store.path("b0"), (1, 1))            # b0 oldest, then read: most recent again
    os.utime(store.path("b1"), (2, 2))
    os.utime(store.path("b2"), (3, 3))
    assert store.get("b0") == bytes([0]) * 900
    assert store.put("b3", b"3" * 900)             # 3600 > 3000: the least recently used (b1) goes
    names = sorted(p.stem for p in (tmp_path / "model").glob("*.kvb"))
    assert names == ["b0", "b2", "b3"]
    assert sum(p.stat().st_size for p in (tmp_path / "model").glob("*.kvb")) <= 3000
    assert not store.put("huge", b"x" * 4000)      # larger than the whole bound: not written
    assert store.get("missing") is None


def test_unwritable_directory_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(UserError, match="kv_tier_dir .* not a writable directory"):
        DiskStore(blocker / "tier", "model", 1 << 20)


def test_hybrid_cache_refuses_a_tier_clearly(tmp_path):
    with pytest.raises(UserError, match="hybrid KV cache"):
        HybridStorage(object(), StorageConfig(tier=TierConfig(dir=str(tmp_path))))


@pytest.mark.parametrize("option, value", [("disk_bytes", -1), ("host_bytes", "lots")])
def test_bad_sizes_are_clear_errors(tmp_path, option, value):
    name = {"disk_bytes": "kv_tier_bytes", "host_bytes": "kv_tier_host_bytes"}[option]
    with pytest.raises(UserError, match=name):
        TierConfig(dir=str(tmp_path), **{option: value}).check()
