"""DeepSeek-V4 over the hybrid paged cache: the same logits as the model's dense state, rejected drafts
leave no trace, and a long request holds a bounded number of window and pending pages."""

from __future__ import annotations

import pytest
import torch

from deepinfer import SamplingParams
from deepinfer.engine import LLM, Engine, EngineConfig
from deepinfer.kvcache import HybridStorage, StorageConfig
from deepinfer.model import load_model
from deepinfer.model.deepseek_v4_cache import DeepseekV4Batch
from deepinfer.tokenizer import Tokenizer
from v4_checkpoint import save_v4_dir

SEQUENCES = [[(7 * i + 3) % 380 + 3 for i in range(40)], [(5 * i + 1) % 380 + 3 for i in range(23)],
             [(11 * i + 7) % 380 + 3 for i in range(9)]]
STEPS = [[13, 5, 0], [1, 11, 3]] + [[1, 1, 1]] * 6 + [[1, 1, 0]] + [[1, 0, 0]] * 19


@pytest.fixture(scope="module")
def v4(tmp_path_factory):
    _, path = save_v4_dir(tmp_path_factory.mktemp("v4"))
    return load_model(path), Tokenizer.from_pretrained(path)


def paged(model, block_size: int = 4) -> HybridStorage:
    return HybridStorage(model, StorageConfig(block_size=block_size, num_blocks=64, max_num_seqs=4))


def run_steps(model, storage, steps):
    """Every sequence fed by `steps` through the paged storage: logits per sequence."""
    tables = [storage.blocks.new_table() for _ in SEQUENCES]
    done, got = [0] * len(SEQUENCES), [[] for _ in SEQUENCES]
    for step in steps:
        ids, positions, parts = [], [], []
        for s, n in enumerate(step):
            if n:
                assert storage.blocks.grow(tables[s], done[s] + n)
                ids += SEQUENCES[s][done[s]:done[s] + n]
                positions += range(done[s], done[s] + n)
                parts.append((tables[s], done[s], n))
        logits = model.forward(torch.tensor(ids), torch.tensor(positions), storage.forward_cache(parts))
        row = 0
        for s, n in enumerate(step):
            if n:
                got[s].append(logits[row:row + n])
                row, done[s] = row + n, done[s] + n
                storage.blocks.commit(tables[s], SEQUENCES[s], done[s])
    return [torch.cat(rows) for rows in got], tables


def dense_steps(model, steps):
    caches, done, got = [model.new_cache() for _ in SEQUENCES], [0] * len(SEQUENCES), [[] for _ in SEQUENCES]
    for step in steps:
        ids, positions, parts = [], [], []
        for s, n in enumerate(step):
            if n:
                ids += SEQUENCES[s][done[s]:done[s] + n]
                positions += range(done[s], done[s] + n)
                parts.append((caches[s], n))
        logits = model.forward(torch.tensor(ids), torch.tensor(positions), DeepseekV4Batch(parts))
        row = 0
        for s, n in enumerate(step):
            if n:
                got[s].append(logits[row:row + n])
                row, done[s] = row + n, done[s] + n
    return [torch.cat(rows) for rows in got]


@pytest.mark.parametrize("block_size", [4, 16])
def test_paged_state_gives_the_dense_state_logits(v4, block_size):
    model = v4[0]
    got, _ = run_steps(model, paged(model, block_size), STEPS)
    for paged_rows, dense_rows in zip(got, dense_steps(model, STEPS)):
        assert (paged_rows - dense_rows).abs().max().item() < 1e-5


def test_rejected_draft_rows_leave_no_trace(v4):
    """Six draft tokens cross a rate-4 and a rate-8 boundary; two are kept, then other tokens follow."""
    model = v4[0]
    storage = paged(model)
    prompt, draft, after = SEQUENCES[0][:21], [9, 8, 7, 6, 5, 4], [30, 31, 32, 33, 34, 35, 36]
    table = storage.blocks.new_table()
    storage.blocks.grow(table, len(prompt) + len(draft))
    ids = prompt + draft
    model.forward(torch.tensor(ids), torch.arange(len(ids)), storage.forward_cache([(table, 0, len(ids))]))
    kept = len(prompt) + 2
    storage.blocks.commit(table, ids, kept)
    truth = ids[:kept] + after
    storage.blocks.grow(table, len(truth))
    got = model.forward(torch.tensor(after), torch.arange(kept, len(truth)),
                        storage.forward_cache([(table, kept, len(after))]))
    expected = model.forward(torch.tensor(truth), torch.arange(len(truth)), model.new_cache())[kept:]
    assert (got - expected).abs().max().item() < 1e-5


def test_a_4000_token_request_holds_a_bounded_number_of_window_pages(v4):
    model, tokenizer = v4
    config = EngineConfig(max_num_batched_tokens=256, speculative=False, enable_prefix_caching=False,
                          num_kv_blocks=260)
    llm = LLM.from_engine(Engine(model, tokenizer, config))
    blocks = llm.engine.blocks
    prompt = [(7 * i + 3) % 380 + 3 for i in range(4000)]
    peak: dict[str, int] = {}
    request = llm.engine.add_request(prompt, SamplingParams(temperature=0, max_tokens=8, ignore_eos=True))
    while llm.engine.has_unfinished():
        llm.engine.step()
        for group, used in blocks.pages_in_use().items():
            peak[group] = max(peak.get(group, 0), used)
        if request in llm.engine.requests and llm.engine.requests[request].sequences[0].num_computed >= 4000:
            seq = llm.engine.requests[request].sequences[0]
            held = [p for p in seq.table.window if p >= 0]
            assert len(held) <= 2  # window 6, pages of 16: the positions the next token attends
    bs, step_pages = 16, 256 // 16
    # between steps: the window's pages; during a step: plus the step's new tokens
    assert peak["window"] <= 2 + step_pages + 1
    assert peak["pending@4"] <= 2 + step_pages + 1 and peak["pending@8"] <= 2 + step_pages + 1
    assert peak["entries"] == -(-4008 // blocks.block_size)  # compressed pages: the whole sequence
    assert blocks.pages_in_use() == {"entries": 0, "window": 0, "pending@4": 0, "pending@8": 0}
    dense_pages = -(-4008 // bs)
    assert peak["window"] * 8 < dense_pages
