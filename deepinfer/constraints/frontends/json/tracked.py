"""A token automaton wrapped with a byte tracker: the shared half of unique.py and length_caps.py.

A wrapper's state is (inner state, tracker); the subclass owns the tracker (`_scan(tracker,
data) -> tracker | None`, None refusing the bytes), its initial value and its mask. Here: the
TokenAutomaton protocol steps both in lockstep, and `_clear_refused` drops from a mask row the
tokens the tracker refuses. Knows nothing about what is tracked.
"""

from __future__ import annotations

import numpy as np


class TrackedAutomaton:
    """TokenAutomaton protocol for (inner state, tracker) states (see the module docstring)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.vocab = inner.vocab

    def _scan(self, tracker, data: bytes):  # pragma: no cover - subclasses define it
        raise NotImplementedError

    def is_accepting(self, state) -> bool:
        return self.inner.is_accepting(state[0])

    def next_state(self, state, token_id: int):
        inner = self.inner.next_state(state[0], token_id)
        if inner is None:
            return None
        tracker = self._scan(state[1], self.vocab.token_bytes[token_id] or b"")
        return None if tracker is None else (inner, tracker)

    def advance_bytes(self, state, data: bytes):
        inner = self.inner.advance_bytes(state[0], data)
        if inner is None:
            return None
        tracker = self._scan(state[1], data)
        return None if tracker is None else (inner, tracker)

    def forced_bytes(self, state) -> bytes:
        data = self.inner.forced_bytes(state[0])
        return data if data and self._scan(state[1], data) is not None else b""

    def precompute_masks(self, budget_s: float = 0.05) -> None:
        pre = getattr(self.inner, "precompute_masks", None)
        if pre is not None:
            pre(budget_s)

    @staticmethod
    def _allowed_among(row: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """The token ids among `ids` (int64) whose bits are set in the int32 row."""
        return ids[(row.take(ids >> 5) >> (ids & 31)) & 1 != 0]

    def _clear_refused(self, tracker, row: np.ndarray, suspects: np.ndarray) -> None:
        """Clear the bits of the suspect token ids whose bytes the tracker refuses."""
        tokens = self.vocab.token_bytes
        self._clear_ids(row, [tok for tok in suspects.tolist() if self._scan(tracker, tokens[tok]) is None])

    @staticmethod
    def _clear_ids(row: np.ndarray, ids) -> None:
        for tok in ids:
            keep = ~(1 << (tok & 31)) & 0xFFFFFFFF
            row[tok >> 5] &= np.int32(keep - (1 << 32) if keep >= 1 << 31 else keep)
