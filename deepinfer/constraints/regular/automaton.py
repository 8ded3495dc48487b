"""The regular back end: a minimized byte DFA driven token by token.

Owns `RegularAutomaton` (the `TokenAutomaton` of a regular constraint): lazy,
cached per-state token masks (shared per Vocabulary by the DFA's canonical
digest, so recompiling or reusing a constraint reuses its masks), next states
by walking a token's bytes, and forced bytes. Knows nothing about syntax.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

import numpy as np

from .dfa import Dfa
from .chains import Loops, loop_bits
from .masks import state_mask
from ..vocab import Vocabulary

MAX_FORCED = 4096
MASK_CACHE_BYTES = 512 << 20  # per Vocabulary, least recently used rows evicted


class MaskCache:
    """Per-vocabulary LRU of read-only mask rows keyed by (dfa digest, state)."""

    def __init__(self, max_bytes: int = MASK_CACHE_BYTES) -> None:
        self.rows: OrderedDict = OrderedDict()
        self.max_bytes = max_bytes
        self.bytes = 0
        self._lock = threading.Lock()  # puts from several threads keep `bytes` exact

    def get(self, key):
        row = self.rows.get(key)
        if row is not None:
            try:
                self.rows.move_to_end(key)
            except KeyError:  # evicted meanwhile by a put in another thread: still a valid row
                pass
        return row

    def put(self, key, row: np.ndarray) -> None:
        with self._lock:
            old = self.rows.pop(key, None)  # a row put twice (two threads) is counted once
            if old is not None:
                self.bytes -= old.nbytes
            self.rows[key] = row
            self.bytes += row.nbytes
            while self.bytes > self.max_bytes and len(self.rows) > 1:
                _, old = self.rows.popitem(last=False)
                self.bytes -= old.nbytes


def mask_cache(vocab: Vocabulary) -> MaskCache:
    cache = vocab.mask_cache.get("regular")
    if cache is None:
        cache = vocab.mask_cache["regular"] = MaskCache()
    return cache


class RegularAutomaton:
    """TokenAutomaton over a DFA (states are ints, 0 is the start)."""

    def __init__(self, dfa: Dfa, vocab: Vocabulary) -> None:
        self.dfa = dfa
        self.vocab = vocab
        n = dfa.num_states
        self._rows: list[list[int] | None] = [None] * n   # Python rows for byte walks
        self._masks: list[np.ndarray | None] = [None] * n
        self._accepting = dfa.accepting.tolist()
        self._cache = mask_cache(vocab)
        self._loops: Loops | None = None

    def initial_state(self) -> int:
        return 0

    def is_accepting(self, state: int) -> bool:
        return self._accepting[state]

    def mask_row(self, state: int) -> np.ndarray:
        """Read-only int32 [ceil(V/32)] row of the text tokens allowed in `state`."""
        row = self._masks[state]
        if row is None:
            key = (self.dfa.digest, state)
            row = self._cache.get(key)
            if row is None:
                if self._loops is None:
                    self._loops = loop_bits(self.dfa.trans)
                row = state_mask(self.dfa.trans, state, self.vocab, self._loops)
                row.flags.writeable = False
                self._cache.put(key, row)
            self._masks[state] = row
        return row

    def precompute_masks(self, budget_s: float = 0.05) -> int:
        """Compute masks ahead of use, breadth first from the start, until the
        time budget is spent (e.g. while the prompt is prefilled); returns how
        many states have a mask now."""
        deadline = time.perf_counter() + budget_s
        for state in range(self.dfa.num_states):  # canonical numbering is breadth first
            if self._masks[state] is None:
                if time.perf_counter() > deadline:
                    break
                self.mask_row(state)
        return sum(m is not None for m in self._masks)

    def fill_mask(self, state: int, row: np.ndarray) -> None:
        np.copyto(row, self.mask_row(state))

    def advance_bytes(self, state: int, data: bytes) -> int | None:
        rows, trans = self._rows, self.dfa.trans
        for byte in data:
            r = rows[state]
            if r is None:
                r = rows[state] = trans[state].tolist()
            state = r[byte]
            if state < 0:
                return None
        return state

    def next_state(self, state: int, token_id: int) -> int | None:
        if not 0 <= token_id < self.vocab.size:
            return None
        data = self.vocab.token_bytes[token_id]
        if not data:
            return None
        return self.advance_bytes(state, data)

    def forced_bytes(self, state: int) -> bytes:
        out = bytearray()
        trans = self.dfa.trans
        while not self._accepting[state] and len(out) < MAX_FORCED:
            live = np.flatnonzero(trans[state] >= 0)
            if live.size != 1:
                break
            out.append(int(live[0]))
            state = int(trans[state, live[0]])
        return bytes(out)
