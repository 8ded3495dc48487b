"""KV block bookkeeping: block tables, reference counts, and the prefix cache.

Pure Python, no tensors. A sequence's KV lives in fixed-size blocks listed in
its `BlockTable`. A block that is full and computed is registered under a hash
chain of its tokens (hash of the parent block's hash and its own token ids), so
a later sequence with the same prefix reuses it instead of recomputing.
Unreferenced registered blocks stay cached and are evicted least recently used
first, only when no never-used block is left.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field

from deepinfer.kvcache.events import AllCleared, BlockRemoved, BlockStored, KVEventLog


def chain_hash(parent: int | None, tokens: tuple[int, ...]) -> int:
    """Key of a full block: depends on every token before it, through `parent`."""
    return hash((parent, tokens))


@dataclass
class BlockTable:
    """The blocks holding one sequence's KV, in position order."""

    block_ids: list[int] = field(default_factory=list)
    # hash chain of the leading full blocks already registered in the prefix cache
    hashes: list[int] = field(default_factory=list)
    replay: int = 0  # tokens before its restored point it recomputes (counted once it is grown)


@dataclass
class PrefixCacheStats:
    queried_tokens: int = 0
    hit_tokens: int = 0

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.queried_tokens if self.queried_tokens else 0.0


class BlockManager:
    """Allocates KV blocks to sequences and shares full blocks through the prefix cache."""

    # Whether `enable_events` describes this manager's cache: a subclass that registers blocks
    # its own way (windowed.py) says False until it publishes events of its own.
    publishes_kv_events = True

    def __init__(self, num_blocks: int, block_size: int, enable_prefix_caching: bool = True) -> None:
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.enable_prefix_caching = enable_prefix_caching
        self.ref_counts = [0] * num_blocks
        self.block_hash: list[int | None] = [None] * num_blocks
        self.block_tokens: list[tuple[int, ...] | None] = [None] * num_blocks  # to rule out collisions
        self.cached: dict[int, int] = {}                      # chain hash -> block id
        self.never_used: deque[int] = deque(range(num_blocks))
        self.evictable: OrderedDict[int, None] = OrderedDict()  # ref 0 but cached, oldest first
        self.stats = PrefixCacheStats()
        self._parents: dict[int, int | None] = {}  # chain hash -> its parent's, for KV events
        self.replayed_tokens = 0  # tokens recomputed before a restored point (replay.py)
        # A KV tier (kvcache/tier/offload.py KVTier) or None: told of every block registered in
        # the prefix cache (`registered`), asked to continue a prefix hit past the pool (`extend`).
        self.tier = None
        self.events: KVEventLog | None = None  # prefix-cache changes, once a subscriber enables them

    def enable_events(self) -> KVEventLog:
        """Start publishing KV events (events.py); the blocks cached so far are announced first."""
        if self.events is None:
            self.events = KVEventLog()
            for key, block in self.cached.items():  # parents before children: dicts keep insertion order
                parent = self._parents.get(key)
                self.events.publish(BlockStored(key, parent, self.block_tokens[block]))
        return self.events

    # -- capacity ---------------------------------------------------------------------------
    @property
    def num_free_blocks(self) -> int:
        return len(self.never_used) + len(self.evictable)

    @property
    def usage(self) -> float:
        """Fraction of blocks referenced by live sequences."""
        return 1.0 - self.num_free_blocks / self.num_blocks

    @property
    def capacity_tokens(self) -> int:
        return self.num_blocks * self.block_size

    def blocks_needed(self, table: BlockTable, num_tokens: int) -> int:
        return max(0, -(-num_tokens // self.block_size) - len(table.block_ids))

    def can_grow(self, table: BlockTable, num_tokens: int) -> bool:
        return self.blocks_needed(table, num_tokens) <= self.num_free_blocks

    def new_table(self) -> BlockTable:
        return BlockTable()

    # -- prefix cache ----------------------------------------------------------------------
    def match_prefix(self, token_ids: list[int]) -> list[int]:
        """Cached blocks holding a prefix of `token_ids`, never all of it (the last
        token must be computed to get logits). Does not take references."""
        if not self.enable_prefix_caching:
            return []
        found, parent = [], None
        for start in range(0, len(token_ids) - 1 - self.block_size + 1, self.block_size):
            tokens = tuple(token_ids[start:start + self.block_size])
            key = chain_hash(parent, tokens)
            block = self.cached.get(key)
            if block is None or self.block_tokens[block] != tokens:
                break
            found.append(block)
            parent = key
        return found

    def allocate_prefix(self, table: BlockTable, token_ids: list[int], restored: int = 0) -> int:
        """Start an empty table with the longest cached prefix; returns cached token count.
        (`restored`: tokens computed before a preemption; only windowed.py makes use of it.)"""
        assert not table.block_ids
        blocks = self.match_prefix(token_ids)
        for block in blocks:
            self._take(block)
            table.block_ids.append(block)
            table.hashes.append(self.block_hash[block])
        if self.tier is not None:  # blocks the pool no longer holds, copied back by adopt()
            self.tier.extend(self, table, token_ids)
        self.stats.queried_tokens += len(token_ids)
        self.stats.hit_tokens += len(table.block_ids) * self.block_size
        return len(table.block_ids) * self.block_size

    def adopt(self, table: BlockTable, tokens: tuple[int, ...]) -> int | None:
        """Take a free block as `table`'s next full block of `tokens`, registered in the prefix
        cache (the caller fills its KV: a tier load); None when no block is free or the key is taken."""
        parent = table.hashes[-1] if table.hashes else None
        key = chain_hash(parent, tokens)
        if key in self.cached or not self.num_free_blocks:
            return None
        block = self._pop_free()
        self.cached[key] = block
        self.block_hash[block], self.block_tokens[block] = key, tokens
        self._parents[key] = parent
        if self.events is not None:  # a block loaded from a tier is cached here like a computed one
            self.events.publish(BlockStored(key, parent, tokens))
        table.block_ids.append(block)
        table.hashes.append(key)
        return block

    def commit(self, table: BlockTable, token_ids: list[int], num_computed: int) -> None:
        """Register the blocks that became full and computed, so others can reuse them."""
        if not self.enable_prefix_caching:
            return
        num_full = min(num_computed, len(token_ids)) // self.block_size
        for index in range(len(table.hashes), num_full):
            parent = table.hashes[-1] if table.hashes else None
            tokens = tuple(token_ids[index * self.block_size:(index + 1) * self.block_size])
            key = chain_hash(parent, tokens)
            block = table.block_ids[index]
            table.hashes.append(key)
            if key not in self.cached:  # an identical block computed concurrently stays private
                self.cached[key] = block
                self.block_hash[block], self.block_tokens[block] = key, tokens
                if self.tier is not None:
                    self.tier.registered(block, key, parent, tokens)
                self._parents[key] = parent
                if self.events is not None:
                    self.events.publish(BlockStored(key, parent, tokens))

    def clear_cache(self) -> None:
        """Forget every cached block no live sequence holds (benchmarks: a cold prefix cache)."""
        while self.evictable:
            block, _ = self.evictable.popitem(last=False)
            self._uncache(block)
            self.never_used.append(block)
        if self.events is not None:
            self.events.publish(AllCleared())
            for key, block in self.cached.items():  # blocks live sequences still hold stay cached
                self.events.publish(BlockStored(key, self._parents.get(key), self.block_tokens[block]))

    # -- allocation ----------------------------------------------------------------------------
    def grow(self, table: BlockTable, num_tokens: int) -> bool:
        """Make `table` hold at least num_tokens slots; False (nothing taken) if blocks run out."""
        needed = self.blocks_needed(table, num_tokens)
        if needed > self.num_free_blocks:
            return False
        for _ in range(needed):
            table.block_ids.append(self._pop_free())
        self.replayed_tokens += table.replay
        table.replay = 0
        return True

    def free(self, table: BlockTable) -> None:
        """Drop the sequence's references; its registered blocks stay cached until evicted."""
        for block in reversed(table.block_ids):  # tail first: its blocks are evicted before the head's
            self.ref_counts[block] -= 1
            assert self.ref_counts[block] >= 0
            if self.ref_counts[block] == 0:
                if self.block_hash[block] is not None:
                    self.evictable[block] = None
                else:
                    self.never_used.append(block)
        table.block_ids.clear()
        table.hashes.clear()
        table.replay = 0

    def _take(self, block: int) -> None:
        if self.ref_counts[block] == 0:
            self.evictable.pop(block, None)
        self.ref_counts[block] += 1

    def _pop_free(self) -> int:
        if self.never_used:
            block = self.never_used.popleft()
        else:
            block, _ = self.evictable.popitem(last=False)  # least recently released
            self._uncache(block)
        self.ref_counts[block] = 1
        return block

    def _uncache(self, block: int) -> None:
        """Take an unreferenced block out of the prefix cache (its KV is about to be overwritten)."""
        key = self.block_hash[block]
        if self.cached.get(key) == block:
            del self.cached[key]
            self._parents.pop(key, None)
            if self.events is not None:
                self.events.publish(BlockRemoved(key))
        self.block_hash[block] = self.block_tokens[block] = None

    def slot(self, table: BlockTable, position: int) -> int:
        """Flat slot index of a token position in the paged pool."""
        return table.block_ids[position // self.block_size] * self.block_size + position % self.block_size
