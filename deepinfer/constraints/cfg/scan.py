"""Vectorized runs of many tokens through one lexeme DFA, cached per (DFA, state, scope).

A *scope* is a set of tokens and a byte offset into each of them: the root
scope is the whole vocabulary at offset 0; a child scope holds the tokens of
its parent scope for which some lexeme DFA, run from some state, reached an
accepting state exactly at byte `end` with bytes left over (the token crosses
a lexeme boundary there). A run of DFA `D` from state `q` over a scope yields
the tokens whose remaining bytes all stay inside `D` (allowed whatever the
parser does next) and one child scope per boundary offset. Runs depend on the
vocabulary and the DFA only, so they are cached across states, requests and
grammars (keyed by the DFA's canonical digest). One numpy step per byte
position, never a Python loop over tokens. Knows nothing about parsing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..masks import pack_mask, token_candidates
from ..vocab import Vocabulary

ROOT = 0


@dataclass
class Scope:
    positions: np.ndarray   # int64 [k] indices into vocab.sorted_* (tokens with len > offset)
    offset: int


@dataclass
class Run:
    """Result of one (DFA, state, scope) run."""

    inside_row: np.ndarray | None   # int32 [words] packed, root scope only
    inside_ids: np.ndarray          # int32 [m] token ids (non-root scopes)
    children: tuple[tuple[int, int], ...]  # (end offset, child scope id)


class ScanCache:
    """Per-vocabulary scopes and runs (shared by every grammar on this vocabulary)."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        self.scopes: list[Scope] = [Scope(np.arange(len(vocab.sorted_ids), dtype=np.int64), 0)]
        self.scope_ids: dict[tuple, int] = {}
        self.runs: dict[tuple, Run] = {}

    def run(self, digest: str, trans: np.ndarray, accepting: np.ndarray, state: int,
            scope_id: int) -> Run:
        key = (digest, state, scope_id)
        hit = self.runs.get(key)
        if hit is None:
            hit = self.runs[key] = self._compute(key, trans, accepting, state, scope_id)
        return hit

    def _compute(self, key, trans, accepting, state, scope_id) -> Run:
        vocab = self.vocab
        scope = self.scopes[scope_id]
        mat, lengths, flat = vocab.sorted_bytes, vocab.sorted_lengths, trans.reshape(-1)
        j = scope.offset
        if scope_id == ROOT:
            idx = token_candidates(np.flatnonzero(trans[state] >= 0), vocab)
        else:
            idx = scope.positions[trans[state][mat[scope.positions, j]] >= 0]
        cur = np.full(idx.shape, state, dtype=np.int64)
        lens = lengths[idx]
        inside, children = [], []
        while idx.size:
            cur = flat[cur * 256 + mat[idx, j]].astype(np.int64)   # [k] state after byte j
            j += 1
            live = cur >= 0
            if not live.all():
                idx, cur, lens = idx[live], cur[live], lens[live]
            done = lens == j
            if done.any():
                inside.append(idx[done])
            more = ~done
            hit = accepting[cur] & more
            if hit.any():
                self.scope_ids[key + (j,)] = child = len(self.scopes)
                self.scopes.append(Scope(idx[hit], j))
                children.append((j, child))
            idx, cur, lens = idx[more], cur[more], lens[more]
        ids = vocab.sorted_ids[np.concatenate(inside)] if inside else np.zeros(0, np.int32)
        if scope_id == ROOT:
            row = pack_mask(ids, vocab)
            row.flags.writeable = False
            return Run(row, np.zeros(0, np.int32), tuple(children))
        return Run(None, ids.astype(np.int32), tuple(children))
