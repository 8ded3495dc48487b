"""Bounded replay's drift from exact replay on a DeepSeek-V4 prefix-cache hit (used by v4_cache.py).

One hybrid storage holds a cached prefix (its compressed pages); for each replay length a second
sequence with that prefix and new tokens is restored by replay, its logits at the new tokens are
compared with exact replay's (teacher-forced: both read the same tokens), then both decode
greedily and their tokens are compared. The model runs through the storage API directly, the way
the engine drives it (grow, forward, commit), so that every logit is at hand.
"""

from __future__ import annotations

import torch

from deepinfer.kvcache import HybridStorage, ReplayPolicy, StorageConfig

CHUNK = 512


def _feed(model, storage, table, tokens: list[int], start: int) -> torch.Tensor:
    """Compute tokens[start:] in chunks; logits of every computed row [len - start, V]."""
    rows = []
    for lo in range(start, len(tokens), CHUNK):
        hi = min(len(tokens), lo + CHUNK)
        assert storage.blocks.grow(table, hi)
        cache = storage.forward_cache([(table, lo, hi - lo)])
        rows.append(model.forward(torch.tensor(tokens[lo:hi]), torch.arange(lo, hi), cache))
        storage.blocks.commit(table, tokens, hi)
    return torch.cat(rows)


def _greedy(model, storage, table, tokens: list[int], first: torch.Tensor, steps: int) -> list[int]:
    out, logits = [], first
    for _ in range(steps):
        out.append(int(torch.argmax(logits)))
        tokens = tokens + out[-1:]
        logits = _feed(model, storage, table, tokens, len(tokens) - 1)[-1]
    return out


class ReplayProbe:
    """A storage with `prefix` cached; `restore(policy)` runs prefix + new tokens from a hit."""

    def __init__(self, model, prefix: list[int], new: list[int], steps: int, block_size: int = 16) -> None:
        self.model, self.prompt, self.steps, self.num_new = model, prefix + new, steps, len(new)
        need = len(self.prompt) + steps + 2 * CHUNK
        self.storage = HybridStorage(model, StorageConfig(block_size=block_size, max_num_seqs=2,
                                                          num_blocks=2 * need // block_size + 8))
        blocks = self.storage.blocks
        table = blocks.new_table()
        _feed(model, self.storage, table, prefix + [new[0] ^ 1], 0)  # caches the prefix's full pages
        blocks.free(table)

    def restore(self, policy: ReplayPolicy | None) -> dict:
        """policy None: no cache (cold). Returns the new tokens' logits, greedy tokens, tokens computed."""
        blocks = self.storage.blocks
        table = blocks.new_table()
        start = 0
        if policy is not None:
            blocks.replay = policy
            start = blocks.allocate_prefix(table, self.prompt)
        with torch.inference_mode():
            logits = _feed(self.model, self.storage, table, self.prompt, start)[-self.num_new:]
            tokens = _greedy(self.model, self.storage, table, self.prompt, logits[-1], self.steps)
        blocks.free(table)
        return {"logits": logits.float(), "tokens": tokens, "computed": len(self.prompt) - start,
                "hit": table.cached_through if policy is not None else 0}


def drift(bounded: dict, exact: dict) -> dict:
    """Max |logit difference| and KL(exact || bounded) at the new tokens; greedy agreement."""
    p, q = torch.log_softmax(exact["logits"], -1), torch.log_softmax(bounded["logits"], -1)
    kl = (p.exp() * (p - q)).sum(-1).clamp(min=0)  # [new tokens] (rounding can dip below 0)
    same = [a == b for a, b in zip(bounded["tokens"], exact["tokens"])]
    common = next((i for i, s in enumerate(same) if not s), len(same))
    return {"max_abs": (exact["logits"] - bounded["logits"]).abs().max().item(), "kl_first": kl[0].item(),
            "kl_mean": kl.mean().item(), "agree": sum(same) / len(same), "common_prefix": common}
