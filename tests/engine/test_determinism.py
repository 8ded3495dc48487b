"""Batch invariance: a seeded "needle" request gives identical tokens and logprobs alone or among
1..32 random other requests, with or without a prefix-cache hit, with chunked prefill on or off.
And the negative control: with the invariant mode off, the plain batched path does differ here."""

import random

import pytest
import torch

from deepinfer import SamplingParams
from deepinfer.engine.invariance import batch_invariant
from deepinfer.kvcache import native_decode
from deepinfer.kvcache import BlockManager, BlockTable, KVPool, PagedKVCache, SeqSlice, probe_layer_shapes

NEEDLE = "the needle in the haystack: tell me something about seeds and determinism"
NEEDLE_PARAMS = dict(temperature=0.9, top_p=0.95, seed=1234, max_tokens=24, ignore_eos=True, logprobs=2)


def random_prompt(rng: random.Random) -> str:
    words = ["alpha", "beta", "gamma", "the", "fox", "{", "}", "42", "seeds", "needle", "json", "-"]
    return " ".join(rng.choice(words) for _ in range(rng.randint(1, 40)))


def run_needle(llm, others: int, rng: random.Random, position: int | None = None):
    prompts = [random_prompt(rng) for _ in range(others)]
    params = [SamplingParams(temperature=rng.choice([0, 0.7, 1.2]), seed=rng.randint(0, 99),
                             max_tokens=rng.randint(1, 30), ignore_eos=True) for _ in prompts]
    position = rng.randint(0, others) if position is None else position
    prompts.insert(position, NEEDLE)
    params.insert(position, SamplingParams(**NEEDLE_PARAMS))
    out = llm.generate(prompts, params)[position].outputs[0]
    return out.token_ids, [lp.logprob for lp in out.logprobs]


@pytest.mark.parametrize("attention", ["native", "torch"])
@pytest.mark.parametrize("family", ["llama", "qwen3", "deepseek", "mistral-sliding"])
def test_needle_is_identical_alone_and_in_random_batches(make_llm, family, attention, monkeypatch):
    """Both invariant attention plans: the native kernel's (where it builds) and PyTorch's."""
    if attention == "torch":
        monkeypatch.setenv("DEEPINFER_NATIVE", "0")
    elif not native_decode.fast(torch.float32, 16, 16):
        pytest.skip("the native attention kernel does not build here with its vectorized path")
    alone = run_needle(make_llm(family, enable_prefix_caching=False), 0, random.Random(0))
    rng = random.Random(1)
    for others, options in [(1, {}), (5, {"max_num_batched_tokens": 16}),          # chunked prefill
                            (12, {"chunked_prefill": False}), (32, {"block_size": 4})]:
        llm = make_llm(family, **options)
        assert run_needle(llm, others, rng) == alone, (others, options)
        # again on the same engine: the needle's prompt now comes from the prefix cache
        hits_before = llm.engine.blocks.stats.hit_tokens
        assert run_needle(llm, others, rng) == alone, ("prefix hit", others, options)
        assert llm.engine.blocks.stats.hit_tokens > hits_before


def forward_rows(model, prompts_ids, invariant: bool):
    """Logits of each prompt's last token from one batched prefill through the paged cache."""
    shapes = probe_layer_shapes(model)
    pool, blocks = KVPool(shapes, 64, 16, torch.float32), BlockManager(64, 16)
    slices, last, offset = [], [], 0
    for ids in prompts_ids:
        table = BlockTable()
        blocks.grow(table, len(ids))
        slices.append(SeqSlice(table.block_ids, 0, len(ids)))
        offset += len(ids)
        last.append(offset - 1)
    ids = torch.tensor([t for p in prompts_ids for t in p])
    positions = torch.tensor([i for p in prompts_ids for i in range(len(p))])
    with torch.no_grad(), batch_invariant(invariant):
        cache = PagedKVCache(pool, slices, invariant=invariant)
        return model.forward(ids, positions, cache, logits_indices=torch.tensor(last))


def test_negative_control_plain_batched_path_differs(tiny):
    """Without the mode, the needle's logits depend on its batch companions (CPU BLAS picks kernels
    by row count). If this ever stops failing on some hardware, the needle test above loses its teeth."""
    model, tok = tiny("llama")
    needle = tok.encode(NEEDLE)
    rng = random.Random(3)
    companions = [[rng.randrange(300) for _ in range(rng.randint(1, 60))] for _ in range(8)]
    plain_alone = forward_rows(model, [needle], False)[0]
    inv_alone = forward_rows(model, [needle], True)[0]
    plain_differs = False
    for k in range(1, 9):
        batch = companions[:k] + [needle]
        plain_differs |= not torch.equal(forward_rows(model, batch, False)[-1], plain_alone)
        assert torch.equal(forward_rows(model, batch, True)[-1], inv_alone), k
    assert plain_differs, "the plain path was batch invariant on this hardware: the control shows nothing"
