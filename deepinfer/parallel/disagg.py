"""Prefill/decode disaggregation, one prefill worker and one decode worker on torch.distributed.

Rank 0 (prefill) runs each prompt through its own engine for one token, which leaves the prompt's
full KV blocks in its prefix cache, and sends them (kv_transfer.py) to rank 1 (decode). Rank 1
registers them in its engine's prefix cache and runs the request with its real sampling
parameters: the prompt is a prefix-cache hit, only its last partial block is computed there, and
decoding continues from the moved blocks. Because the decode engine runs the request the way a
single engine with that prefix cached does (same sampler, same seed), the output is the single
engine's, token for token. The transport is torch.distributed point-to-point: it is already the
collective layer of expert parallelism, and gloo/NCCL give blocking send/recv with a bounded wait.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from deepinfer.engine import LLM
from deepinfer.parallel.group import RankGroup, spawn
from deepinfer.parallel.kv_transfer import export_prefix, import_prefix, recv_blocks, send_blocks
from deepinfer.types import SamplingParams

PREFILL, DECODE = 0, 1


@dataclass
class DisaggOutput:
    """One request's completion tokens and text, and what moved for it."""

    token_ids: list[int]
    text: str
    blocks_moved: int
    bytes_moved: int
    prefix_hit_tokens: int  # prompt tokens the decode engine took from the moved blocks


def _engine(model_dir: str, options: dict) -> LLM:
    return LLM(model_dir, quantization=None, **options)


def rank_main(group: RankGroup, model_dir: str, prompts: list[list[int]], params: list[SamplingParams],
              options: dict, out_dir: str) -> None:
    torch.set_num_threads(1)
    llm = _engine(model_dir, options)
    block_size = llm.engine.blocks.block_size
    results = []
    for prompt, sp in zip(prompts, params):
        if group.rank == PREFILL:
            llm.generate(prompt, SamplingParams(max_tokens=1, temperature=0.0, ignore_eos=True))
            send_blocks(export_prefix(llm.engine, prompt), DECODE, block_size)
        else:
            blocks = recv_blocks(llm.engine, PREFILL)
            moved = import_prefix(llm.engine, blocks)
            hits_before = llm.engine.blocks.stats.hit_tokens
            out = llm.generate(prompt, sp)[0]
            results.append(DisaggOutput(list(out.outputs[0].token_ids), out.outputs[0].text, moved,
                                        blocks.nbytes if moved else 0,
                                        llm.engine.blocks.stats.hit_tokens - hits_before))
    if group.rank == DECODE:
        torch.save(results, Path(out_dir) / "decode.pt")


def generate_disaggregated(model_dir: str | Path, prompts: list[list[int]],
                           params: SamplingParams | list[SamplingParams] | None = None, *,
                           timeout_s: float = 60.0, **engine_options) -> list[DisaggOutput]:
    """Generate each prompt (token ids) with prefill on one process and decode on another."""
    params = params if isinstance(params, list) else [params or SamplingParams()] * len(prompts)
    if len(params) != len(prompts):
        raise ValueError(f"{len(prompts)} prompts but {len(params)} sampling params")
    # A request without a seed would draw a fresh one per engine; fix it here so both agree.
    params = [sp if sp.seed is not None or sp.temperature == 0 else replace(sp, seed=int(torch.randint(2**31, ())))
              for sp in params]
    with tempfile.TemporaryDirectory(prefix="deepinfer-pd-") as out_dir:
        spawn(rank_main, 2, str(model_dir), prompts, params, dict(engine_options), out_dir, timeout_s=timeout_s)
        return torch.load(Path(out_dir) / "decode.pt", weights_only=False)
