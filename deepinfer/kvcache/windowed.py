"""Blocks for models whose every layer attends a sliding window (Mistral, Qwen with sliding layers only).

No position is attended once it is `window - 1` tokens behind the newest one, in any layer, so:
- a running sequence gives back each block as soon as it falls out of every layer's window
  (registered blocks stay in the prefix cache, evictable); its table keeps the place with
  `NULL_BLOCK`, a block that is never handed out and holds zeros;
- a prefix-cache hit at H tokens needs only the blocks of the window before H, not the whole
  prefix: the hash chain is walked over the tokens, and the hit is the longest block boundary
  whose window blocks are all cached;
- a sequence restored further than the cache holds (a preempted one, whose tokens up to
  `restored` were computed before) restarts at the replay's start before `restored`
  (`replay.py`) instead of at the hit: exact replay reaches as far as the windows of all layers
  compound, so what it rebuilds equals a cold run (the zeros standing in for positions before
  the start are read only by replayed positions whose outputs no kept row depends on).
KV events (events.py) are those of the full-attention cache: each registered block's chain key
and parent, and its eviction. A router matching leading blocks then sees a lower bound of the hit:
a block that fell out of every window is evictable first, and the chain it indexes stops there,
while this cache would still hit past it wherever the window's blocks are cached.
"""

from __future__ import annotations

from deepinfer.kvcache.block_manager import BlockManager, BlockTable, chain_hash
from deepinfer.kvcache.events import BlockStored
from deepinfer.kvcache.replay import ReplayPolicy

NULL_BLOCK = 0


class WindowedBlockManager(BlockManager):

    def __init__(self, num_blocks: int, block_size: int, enable_prefix_caching: bool, windows: tuple[int, ...],
                 replay: ReplayPolicy | None = None) -> None:
        super().__init__(num_blocks, block_size, enable_prefix_caching)
        self.never_used.remove(NULL_BLOCK)
        self.num_blocks = num_blocks - 1
        self.windows, self.window = windows, max(windows)
        self.replay = replay or ReplayPolicy("exact")

    # -- prefix cache ----------------------------------------------------------------------------
    def _chain(self, token_ids: list[int]) -> list[int]:
        """Chain keys of the full blocks of `token_ids` but its last token (which must be computed)."""
        keys, parent, bs = [], None, self.block_size
        for start in range(0, len(token_ids) - bs, bs):
            parent = chain_hash(parent, tuple(token_ids[start:start + bs]))
            keys.append(parent)
        return keys

    def _cached(self, key: int, tokens: list[int]) -> int | None:
        block = self.cached.get(key)
        return block if block is not None and self.block_tokens[block] == tuple(tokens) else None

    def _hit(self, token_ids: list[int]) -> tuple[int, list[int]]:
        """(blocks before the longest hit, the chain keys): the hit's window blocks are all cached."""
        if not self.enable_prefix_caching:
            return 0, []
        keys, bs = self._chain(token_ids), self.block_size
        present = [self._cached(k, token_ids[i * bs:(i + 1) * bs]) is not None for i, k in enumerate(keys)]
        for end in range(len(keys), 0, -1):
            first = max(0, end * bs - self.window + 1) // bs
            if all(present[first:end]):
                return end, keys
        return 0, keys

    def match_prefix(self, token_ids: list[int]) -> list[int]:
        end, keys = self._hit(token_ids)
        bs = self.block_size
        return [self._cached(k, token_ids[i * bs:(i + 1) * bs]) or NULL_BLOCK for i, k in enumerate(keys[:end])]

    def allocate_prefix(self, table: BlockTable, token_ids: list[int], restored: int = 0) -> int:
        assert not table.block_ids
        end, keys = self._hit(token_ids)
        bs, hit = self.block_size, end * self.block_size
        self.stats.queried_tokens += len(token_ids)
        self.stats.hit_tokens += hit
        start = max(hit, self.replay.start(restored, self.windows) // bs * bs) if restored > hit else hit
        if start > hit:  # positions before the replay's start are never read again
            table.replay = restored - start
            table.block_ids.extend([NULL_BLOCK] * (start // bs))
            table.hashes.extend(keys[:start // bs])  # the chain goes on; placeholders are never registered
            return start
        first = max(0, hit - self.window + 1) // bs
        for index in range(end):
            block = self._cached(keys[index], token_ids[index * bs:(index + 1) * bs]) if index >= first else None
            if block is None:
                table.block_ids.append(NULL_BLOCK)
            else:
                self._take(block)
                table.block_ids.append(block)
        table.hashes.extend(keys[:end])
        return hit

    def commit(self, table: BlockTable, token_ids: list[int], num_computed: int) -> None:
        """Register full computed blocks (not the placeholders), then give back those out of every window."""
        if self.enable_prefix_caching:
            num_full = min(num_computed, len(token_ids)) // self.block_size
            for index in range(len(table.hashes), num_full):
                parent = table.hashes[-1] if table.hashes else None
                tokens = tuple(token_ids[index * self.block_size:(index + 1) * self.block_size])
                key = chain_hash(parent, tokens)
                table.hashes.append(key)
                block = table.block_ids[index]
                if block != NULL_BLOCK and key not in self.cached:
                    self.cached[key] = block
                    self.block_hash[block], self.block_tokens[block] = key, tokens
                    self._parents[key] = parent
                    if self.events is not None:
                        self.events.publish(BlockStored(key, parent, tokens))
        for index in range(max(0, num_computed - self.window + 1) // self.block_size):
            block = table.block_ids[index]
            if block != NULL_BLOCK:
                self._release(block)
                table.block_ids[index] = NULL_BLOCK

    def free(self, table: BlockTable) -> None:
        for block in reversed(table.block_ids):
            if block != NULL_BLOCK:
                self._release(block)
        table.block_ids.clear()
        table.hashes.clear()
        table.replay = 0

    def _release(self, block: int) -> None:
        self.ref_counts[block] -= 1
        assert self.ref_counts[block] >= 0
        if self.ref_counts[block] == 0:
            if self.block_hash[block] is not None:
                self.evictable[block] = None
            else:
                self.never_used.append(block)
