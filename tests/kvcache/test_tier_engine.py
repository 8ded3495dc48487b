"""The KV tier under a real engine on a tiny random Llama: same greedy outputs with and without it,
prefixes served from disk after a restart (a fresh model object and a fresh process), bad files
ignored with a warning, the byte bound kept."""

import json
import logging
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from deepinfer.engine import Engine, EngineConfig, LLM
from deepinfer.engine.output import merge
from deepinfer.model import load_model
from deepinfer.testing import make_tiny_model_dir
from deepinfer.tokenizer import Tokenizer
from deepinfer.types import SamplingParams

GREEDY = SamplingParams(max_tokens=6, temperature=0)
BLOCK = 16


@pytest.fixture(autouse=True)
def _one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tier-models")
    return {seed: make_tiny_model_dir(root / f"seed{seed}", seed=seed) for seed in (0, 1)}


@pytest.fixture(scope="module")
def loaded(model_dirs):
    return {seed: (load_model(path), Tokenizer.from_pretrained(path)) for seed, path in model_dirs.items()}


def _llm(model_and_tokenizer, **options) -> LLM:
    model, tokenizer = model_and_tokenizer
    options.setdefault("batch_invariant", True)   # outputs compared across different prefill chunkings
    options.setdefault("speculative", False)
    return LLM.from_engine(Engine(model, tokenizer, EngineConfig(**options)))


def _prompts(count=3, users=2, prefix=96, suffix=21, seed=0):
    rng = random.Random(seed)
    systems = [[rng.randrange(10, 350) for _ in range(prefix)] for _ in range(count)]
    return [s + [rng.randrange(10, 350) for _ in range(suffix)] for s in systems for _ in range(users)]


def _tokens(outputs):
    return [o.outputs[0].token_ids for o in outputs]


def _files(tier_dir):
    return sorted(Path(tier_dir).glob("*/*.kvb"))


def test_outputs_identical_with_and_without_the_tier_while_the_pool_evicts(loaded, tmp_path):
    prompts = _prompts(count=4, users=2)
    reference = _tokens(_llm(loaded[0], num_kv_blocks=256).generate(prompts, GREEDY))
    # 20 blocks hold one request at a time: each prefix is evicted before its second user comes
    llm = _llm(loaded[0], num_kv_blocks=20, max_num_seqs=1, kv_tier_dir=str(tmp_path))
    without = _llm(loaded[0], num_kv_blocks=20, max_num_seqs=1)
    order = prompts[0::2] + prompts[1::2]            # every system prompt once, then again
    outs = [llm.generate([p], GREEDY)[0] for p in order]
    assert _tokens(outs) == _tokens([without.generate([p], GREEDY)[0] for p in order])
    assert _tokens(outs) == reference[0::2] + reference[1::2]
    tier = llm.engine.kv.tier
    assert tier.stats.loaded_blocks >= 4 * (96 // BLOCK)   # the second visits came from the tier
    assert all(o.num_cached_tokens >= 96 for o in outs[4:])
    assert tier.stats.rejected_blocks == 0


def test_host_memory_tier_alone_serves_evicted_prefixes(loaded):
    prompts = _prompts(count=3, users=2, seed=3)
    order = prompts[0::2] + prompts[1::2]
    reference = _tokens(_llm(loaded[0], num_kv_blocks=256).generate(order, GREEDY))
    llm = _llm(loaded[0], num_kv_blocks=20, max_num_seqs=1, kv_tier_host_bytes=1 << 24)
    outs = [llm.generate([p], GREEDY)[0] for p in order]
    assert _tokens(outs) == reference
    assert llm.engine.kv.tier.disk is None and llm.engine.kv.tier.stats.loaded_blocks > 0


def test_a_restarted_engine_serves_the_prefix_from_disk(model_dirs, loaded, tmp_path):
    prompts = _prompts(count=2, users=1, prefix=100, seed=1)
    first = _llm(loaded[0], kv_tier_dir=str(tmp_path), num_kv_blocks=64)
    before = first.generate(prompts, GREEDY)
    first.engine.kv.tier.close()
    assert all(o.num_cached_tokens == 0 for o in before)
    assert len(_files(tmp_path)) == 2 * ((len(prompts[0]) - 1) // BLOCK)
    # a fresh model object from the same checkpoint: same identity, a cold pool
    path = model_dirs[0]
    second = _llm((load_model(path), Tokenizer.from_pretrained(path)), kv_tier_dir=str(tmp_path), num_kv_blocks=64)
    after = second.generate(prompts, GREEDY)
    assert _tokens(after) == _tokens(before)
    assert [o.num_cached_tokens for o in after] == [(len(p) - 1) // BLOCK * BLOCK for p in prompts]
    assert second.engine.kv.tier.stats.stored_blocks == 0   # nothing new to write


def test_queued_requests_blocks_are_read_ahead_of_the_step(model_dirs, loaded, tmp_path):
    prompts = _prompts(count=2, users=1, prefix=100, seed=6)
    first = _llm(loaded[0], kv_tier_dir=str(tmp_path), num_kv_blocks=64)
    reference = _tokens(first.generate(prompts, GREEDY))
    first.engine.kv.tier.close()
    engine = _llm(loaded[0], kv_tier_dir=str(tmp_path), num_kv_blocks=64).engine
    for prompt in prompts:
        engine.add_request(prompt, GREEDY)
    tier = engine.kv.tier
    tier.prefetcher.join()                       # read while the requests wait, before any step
    blocks = (len(prompts[0]) - 1) // BLOCK
    assert len(tier.prefetched) == 2 * blocks and tier.stats.loaded_blocks == 0
    done = {}
    while engine.has_unfinished():
        for delta in engine.step():
            done[delta.request_id] = merge(done.get(delta.request_id), delta)
    assert tier.stats.loaded_blocks == 2 * blocks
    assert [done[rid].token_ids for rid in sorted(done)] == reference


RESTART_SCRIPT = """
import json, sys, torch
torch.set_num_threads(1)
from deepinfer.engine import Engine, EngineConfig, LLM
from deepinfer.engine.output import merge
from deepinfer.model import load_model
from deepinfer.tokenizer import Tokenizer
from deepinfer.types import SamplingParams
path, tier, prompts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
llm = LLM.from_engine(Engine(load_model(path), Tokenizer.from_pretrained(path), EngineConfig(
    num_kv_blocks=64, batch_invariant=True, speculative=False, kv_tier_dir=tier)))
outs = llm.generate(prompts, SamplingParams(max_tokens=6, temperature=0))
print(json.dumps([[o.outputs[0].token_ids, o.num_cached_tokens] for o in outs]))
"""


@pytest.mark.slow  # two interpreters importing torch: ~20 s on a loaded machine
def test_a_fresh_process_hits_the_tier_another_process_filled(model_dirs, tmp_path):
    prompts = _prompts(count=1, users=2, prefix=80, seed=2)

    def run():
        done = subprocess.run([sys.executable, "-c", RESTART_SCRIPT, str(model_dirs[0]), str(tmp_path),
                               json.dumps(prompts)], capture_output=True, text=True, timeout=300,
                              env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    cold, warm = run(), run()
    assert [t for t, _ in warm] == [t for t, _ in cold]
    assert cold[0][1] == 0 and cold[1][1] == 80                # the second user hit the first's pool blocks
    assert [c for _, c in warm] == [96, 96]                    # both whole prompts from the disk tier


def test_corrupt_truncated_and_foreign_files_are_ignored_with_a_warning(loaded, tmp_path, caplog):
    prompts = _prompts(count=2, users=1, prefix=96, seed=4)
    writer = _llm(loaded[0], kv_tier_dir=str(tmp_path), num_kv_blocks=64)
    reference = _tokens(writer.generate(prompts, GREEDY))
    writer.engine.kv.tier.close()
    tier = writer.engine.kv.tier
    from deepinfer.kvcache.tier import block_digests
    chains = [block_digests(tier.identity, p, BLOCK, 3) for p in prompts]
    first = tier.disk.path(chains[0][1].hex())           # prompt 0: block 1 corrupt
    data = bytearray(first.read_bytes())
    data[200] ^= 0xFF
    first.write_bytes(bytes(data))
    second = tier.disk.path(chains[1][2].hex())          # prompt 1: block 2 truncated
    second.write_bytes(second.read_bytes()[:1000])

    reader = _llm(loaded[0], kv_tier_dir=str(tmp_path), num_kv_blocks=64)
    with caplog.at_level(logging.WARNING, logger="deepinfer.kvcache.tier"):
        outs = reader.generate(prompts, GREEDY)
    assert _tokens(outs) == reference
    assert [o.num_cached_tokens for o in outs] == [1 * BLOCK, 2 * BLOCK]   # up to the bad block
    assert reader.engine.kv.tier.stats.rejected_blocks == 2
    assert sum("checksum" in r.getMessage() for r in caplog.records) == 2

    # another model (same config, other weights) misses, and a file of it under this model's
    # name is refused for naming another model
    other = _llm(loaded[1], kv_tier_dir=str(tmp_path), num_kv_blocks=64)
    other_reference = _tokens(_llm(loaded[1], num_kv_blocks=64).generate(prompts, GREEDY))
    assert _tokens(other.generate(prompts, GREEDY)) == other_reference
    other_tier = other.engine.kv.tier
    other_tier.close()
    assert other_tier.identity.hex != tier.identity.hex and other_tier.stats.loaded_blocks == 0
    foreign = other_tier.disk.path(block_digests(other_tier.identity, prompts[0], BLOCK, 1)[0].hex())
    tier.disk.path(chains[0][0].hex()).write_bytes(foreign.read_bytes())
    caplog.clear()
    third = _llm(loaded[0], kv_tier_dir=str(tmp_path), num_kv_blocks=64)
    with caplog.at_level(logging.WARNING, logger="deepinfer.kvcache.tier"):
        outs = third.generate(prompts[:1], GREEDY)
    assert _tokens(outs) == reference[:1] and outs[0].num_cached_tokens == 0
    assert any("model is" in r.getMessage() for r in caplog.records)


def test_tier_bytes_bound_is_kept(loaded, tmp_path):
    prompts = _prompts(count=5, users=1, prefix=80, seed=5)
    probe = _llm(loaded[0], kv_tier_dir=str(tmp_path / "probe"), num_kv_blocks=64)
    probe.generate(prompts[:1], GREEDY)
    probe.engine.kv.tier.close()
    file_bytes = _files(tmp_path / "probe")[0].stat().st_size
    bound = 7 * file_bytes + file_bytes // 2
    llm = _llm(loaded[0], kv_tier_dir=str(tmp_path / "bounded"), kv_tier_bytes=bound, num_kv_blocks=64)
    for prompt in prompts:
        llm.generate([prompt], GREEDY)
    llm.engine.kv.tier.close()
    files = _files(tmp_path / "bounded")
    computed = len(prompts[0]) + GREEDY.max_tokens - 1        # the last sampled token has no KV
    assert llm.engine.kv.tier.stats.stored_blocks == 5 * (computed // BLOCK)
    assert sum(f.stat().st_size for f in files) <= bound and len(files) == 7


def test_two_engines_sharing_a_bounded_directory(loaded, tmp_path):
    """Each one's writes evict the other's files (a shared LRU): a file gone is a miss, never an error."""
    prompts = _prompts(count=4, users=1, prefix=64, seed=7)
    reference = _tokens(_llm(loaded[0], num_kv_blocks=256).generate(prompts, GREEDY))
    bound = 6 * 8800                                   # about six block files of this model
    a, b = (_llm(loaded[0], kv_tier_dir=str(tmp_path), kv_tier_bytes=bound, num_kv_blocks=8, max_num_seqs=1)
            for _ in range(2))
    outs = []
    for round_ in range(2):
        for i, prompt in enumerate(prompts):
            llm = (a, b)[(i + round_) % 2]
            outs.append(llm.generate([prompt], GREEDY)[0])
            llm.engine.kv.tier.flush()
    assert _tokens(outs) == reference * 2
    assert sum(f.stat().st_size for f in _files(tmp_path)) <= bound
    assert a.engine.kv.tier.stats.rejected_blocks == b.engine.kv.tier.stats.rejected_blocks == 0
