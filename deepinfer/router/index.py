"""The router's view of every replica's prefix cache, rebuilt from the replicas' KV events.

Blocks are keyed by the router's own hash chain, `key = hash((parent key, token ids))` over
ints only (the same value in every process), since a replica's block hashes are stable only
inside that replica (kvcache/events.py). Each replica's hash maps to a router key, so removals
and children find their block; a block whose parent the router never saw is skipped (it could
never be matched from the start of a prompt anyway).
"""

from __future__ import annotations

from collections import defaultdict

from deepinfer.kvcache.events import AllCleared, BlockRemoved, BlockStored

ROOT = 0  # the parent key of a prompt's first block


def block_key(parent: int, tokens: tuple[int, ...]) -> int:
    return hash((parent, tokens))


def prompt_keys(token_ids: list[int], block_size: int) -> list[int]:
    """Keys of the prompt's full blocks a replica could reuse: as `BlockManager.match_prefix`,
    never the block holding the last token (it must be computed for its logits)."""
    keys, parent = [], ROOT
    for start in range(0, len(token_ids) - block_size, block_size):
        parent = block_key(parent, tuple(token_ids[start:start + block_size]))
        keys.append(parent)
    return keys


class PrefixIndex:
    def __init__(self) -> None:
        self.holders: dict[int, set[int]] = defaultdict(set)  # router key -> replicas caching it
        self._keys: dict[int, dict[int, int]] = defaultdict(dict)  # replica -> its block hash -> router key

    def apply(self, replica: int, events: list) -> None:
        keys = self._keys[replica]
        for event in events:
            if isinstance(event, BlockStored):
                parent = ROOT if event.parent_hash is None else keys.get(event.parent_hash)
                if parent is None:
                    continue
                key = block_key(parent, tuple(event.token_ids))
                keys[event.block_hash] = key
                self.holders[key].add(replica)
            elif isinstance(event, BlockRemoved):
                key = keys.pop(event.block_hash, None)
                if key is not None:
                    self._discard(key, replica)
            elif isinstance(event, AllCleared):
                self.clear(replica)

    def clear(self, replica: int) -> None:
        """Forget everything `replica` cached (cleared, died or restarted)."""
        for key in self._keys.pop(replica, {}).values():
            self._discard(key, replica)

    def _discard(self, key: int, replica: int) -> None:
        holders = self.holders.get(key)
        if holders is not None:
            holders.discard(replica)
            if not holders:
                del self.holders[key]

    def num_blocks(self, replica: int) -> int:
        return len(self._keys.get(replica, {}))

    def matched_blocks(self, keys: list[int], replicas: list[int]) -> dict[int, int]:
        """For each replica, how many leading blocks of `keys` it caches."""
        matched = dict.fromkeys(replicas, 0)
        for depth, key in enumerate(keys):
            advanced = False
            for replica in self.holders.get(key, ()):
                if matched.get(replica) == depth:
                    matched[replica] = depth + 1
                    advanced = True
            if not advanced:
                break
        return matched
