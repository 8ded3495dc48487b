"""Character-level shortcuts for token masks: loops and counting chains.

A token made of characters that all keep a DFA on a simple path can be
accepted without walking its bytes. Two shapes cover most text states:
- a loop: every character of a set leads from state s back to s (`[^"]*`);
- a chain: every character of a set leads from s_k to the same s_{k+1}, as in
  bounded repetition (`[^"]{0,20}`, `[a-z]{3,30}`); a token of n such
  characters ends in s_n.
Characters are seen through the vocabulary's signature buckets (vocab.py):
each ASCII character, and "every 2-/3-/4-byte character". Owns the per-state
step table over those buckets and the per-vocabulary caches of covered tokens.
Knows nothing about regexes or the matcher.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from .mask_bits import pack_mask
from .nfa import utf8_sequences
from ..vocab import Vocabulary

BUCKETS = 131            # 128 ASCII characters + 2-, 3-, 4-byte characters
MAX_CHAIN = 16           # characters per token followed along a chain
_MULTIBYTE = ((128, 0x80, 0x7FF), (129, 0x800, 0xD7FF), (129, 0xE000, 0xFFFF), (130, 0x10000, 0x10FFFF))


@dataclass
class Loops:
    """Per-DFA step data. steps: int32 [S, 131] state after one character of a
    bucket (-1: dead, or the bucket's characters disagree); bits: uint64 [S, 3]
    loop sets; neg: the 3 columns of ~bits (contiguous); any: bool [S]."""

    steps: np.ndarray
    bits: np.ndarray
    neg: list[np.ndarray]
    any: np.ndarray
    chains: dict = field(default_factory=dict)


def bucket_bits(mask: np.ndarray) -> np.ndarray:
    """bool [..., 131] -> uint64 [..., 3] signature words."""
    padded = np.zeros(mask.shape[:-1] + (192,), dtype=bool)
    padded[..., :BUCKETS] = mask
    return np.packbits(padded, axis=-1, bitorder="little").view("<u8")


def char_steps(trans: np.ndarray, states: np.ndarray | None = None) -> np.ndarray:
    """int32 [S, 131] (or [len(states), 131]): the state after one character of each
    bucket, if all the bucket's characters agree (ASCII buckets are single characters)."""
    rows = np.arange(trans.shape[0], dtype=np.int64) if states is None else np.asarray(states, np.int64)
    n = rows.shape[0]
    steps = np.full((n, BUCKETS), -1, dtype=np.int32)
    steps[:, :128] = trans[rows, :128]
    agree = {}
    for bucket, lo, hi in _MULTIBYTE:
        for seq in utf8_sequences(lo, hi):
            cur, ok = rows.copy(), np.ones(n, dtype=bool)
            for b_lo, b_hi in seq:
                block = trans[np.maximum(cur, 0), b_lo:b_hi + 1]        # [S, k]
                ok &= (cur >= 0) & (block == block[:, :1]).all(axis=1)
                cur = block[:, 0].astype(np.int64)
            ends = np.where(ok & (cur >= 0), cur, -1)
            if bucket in agree:
                prev = agree[bucket]
                ends = np.where(prev == ends, ends, -1)
            agree[bucket] = ends
    for bucket, ends in agree.items():
        steps[:, bucket] = ends
    return steps


def loop_bits(trans: np.ndarray) -> Loops:
    """Steps and loop sets: the buckets whose characters lead a state back to itself."""
    steps = char_steps(trans)
    bits = bucket_bits(steps == np.arange(trans.shape[0])[:, None])
    return Loops(steps, bits, [np.ascontiguousarray(~bits[:, w]) for w in range(3)], bits.any(axis=1))


class LazySteps:
    """Character steps of a big DFA's states computed when chain() asks for them
    (`steps[q]`, `chains`), for DFAs where only a few states are ever visited:
    loop_bits over every state of a maxLength-256 string costs ~15 ms."""

    def __init__(self, trans: np.ndarray) -> None:
        self.trans = trans
        self.steps = _StepRows(trans)
        self.chains: dict = {}


class _StepRows:
    def __init__(self, trans: np.ndarray) -> None:
        self.trans, self.rows = trans, {}

    def __getitem__(self, q) -> np.ndarray:
        q = int(q)
        row = self.rows.get(q)
        if row is None:  # one batch for the states chain() will likely ask for next
            path = [s for s in dict.fromkeys(self._ascii_path(q)) if s not in self.rows]
            for s, got in zip(path, char_steps(self.trans, np.array(path))):
                self.rows[s] = got
            row = self.rows[q]
        return row

    def _ascii_path(self, q: int) -> list[int]:
        """q and its most common ASCII successors, MAX_CHAIN deep (chain()'s usual path)."""
        path = [q]
        for _ in range(MAX_CHAIN):
            row = self.trans[path[-1], :128]
            live = row[row >= 0]
            if not live.size:
                break
            path.append(int(np.bincount(live).argmax()))
        return path


def chain(loops: "Loops | LazySteps", state: int):
    """(inter uint64 [K+1, 3], ends int32 [K+1]) or None: after k characters all
    in inter[k], a token ends in ends[k]; follows each state's most common step."""
    hit = loops.chains.get(state)
    if hit is None:
        inter, ends = [0], [state]  # inter[0]: no character read yet
        acc, cur = _ALL, state
        for _ in range(MAX_CHAIN):
            step = _step(loops, cur)
            if step is None:
                break
            nxt, bits = step
            acc = acc & bits
            if not acc:
                break
            inter.append(acc)
            ends.append(nxt)
            cur = nxt
        hit = loops.chains[state] = (_words(inter), np.array(ends, dtype=np.int32)) if len(ends) > 2 else False
    return hit or None


_ALL = (1 << 192) - 1  # every bucket, as one Python int (3 words: chain() ANDs ints, not arrays)


def _step(loops, cur: int):
    """(most common successor, its buckets as an int) of state `cur`, or None; cached per
    state, so the chains of a string's successive states (each one shorter) step once each."""
    got = loops.chains.get(("step", cur))
    if got is None:
        row = loops.steps[cur]
        live = row[row >= 0]
        if not live.size:
            got = loops.chains[("step", cur)] = False
        else:
            nxt = int(np.bincount(live).argmax())
            words = bucket_bits(row == nxt).tolist()
            got = loops.chains[("step", cur)] = (nxt, words[0] | words[1] << 64 | words[2] << 128)
    return got or None


def _words(sets: list[int]) -> np.ndarray:
    """uint64 [k, 3] from bucket sets held as ints."""
    mask = (1 << 64) - 1
    return np.array([[v & mask, v >> 64 & mask, v >> 128] for v in sets], dtype=np.uint64)


@dataclass
class Cover:
    """Tokens accepted by a shortcut (per vocabulary, cached)."""

    covered: np.ndarray    # bool [n] over sorted positions
    row: np.ndarray        # packed int32 row of the covered token ids (read-only)
    rest: np.ndarray       # int64 [m] positions not covered, ascending
    rest_keys: np.ndarray  # int64 [m] their prefix keys (vocab.sorted_keys)
    by_length: tuple | None = None  # (positions, characters) of covered tokens, longest first

    def longer_than(self, vocab: Vocabulary, k: int) -> np.ndarray:
        """Covered positions of tokens with more than k characters."""
        if self.by_length is None:
            pos = np.flatnonzero(self.covered)
            nchars = vocab.sorted_nchars.take(pos)
            order = np.argsort(-nchars, kind="stable")
            self.by_length = (pos.take(order), -nchars.take(order))
        pos, neg_nchars = self.by_length
        return pos[:np.searchsorted(neg_nchars, -k, side="left")]


def _cached(vocab: Vocabulary, kind: str, key: bytes, build) -> Cover:
    cache = vocab.mask_cache.setdefault(kind, OrderedDict())
    hit = cache.get(key)
    if hit is None:
        covered = build()
        row = pack_mask(vocab.sorted_ids[covered], vocab)
        row.flags.writeable = False
        rest = np.flatnonzero(~covered)
        hit = cache[key] = Cover(covered, row, rest, vocab.sorted_keys.take(rest))
        while len(cache) > 64:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return hit


def loop_cover(vocab: Vocabulary, bits: np.ndarray) -> Cover:
    """Tokens whose characters are all in the loop set `bits` (uint64 [3])."""
    def build():
        neg, sig = ~bits, vocab.sig_words[0]
        return ((sig[0] & neg[0]) | (sig[1] & neg[1]) | (sig[2] & neg[2])) == 0
    return _cached(vocab, "loop_cover", bits.tobytes(), build)


def chain_parts(vocab: Vocabulary, inter: np.ndarray):
    """(cover, max characters or None, packed row of the covered tokens) for a chain.

    A chain over one character set (bounded repetition of one class) reuses the
    loop cover of that set, limited to tokens of at most len(inter) - 1 characters."""
    if (inter[1:] == inter[1]).all():
        cover = loop_cover(vocab, inter[1])
        limit = inter.shape[0] - 1
        long = cover.longer_than(vocab, limit)
        row = cover.row
        if long.size:
            row = row & ~pack_mask(vocab.sorted_ids.take(long), vocab)
        return cover, limit, row
    cover = chain_cover(vocab, inter)
    return cover, None, cover.row


def chain_cover(vocab: Vocabulary, inter: np.ndarray) -> Cover:
    """Tokens of n characters (1 <= n < len(inter)) all in inter[n]."""
    def build():
        k = inter.shape[0]
        table = np.zeros((k + 1, 3), dtype=np.uint64)               # row k: too long
        table[1:k] = inter[1:]
        n = np.minimum(vocab.sorted_nchars, k)
        sig = vocab.sig_words[0]
        bad = None
        for w in range(3):
            part = sig[w] & ~table[:, w].take(n)
            bad = part if bad is None else bad | part
        return (bad == 0) & (n > 0) & (n < k)
    return _cached(vocab, "chain_cover", inter.tobytes(), build)
