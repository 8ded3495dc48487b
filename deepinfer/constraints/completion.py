"""Short completions: how few tokens can surely still finish a constraint from a state.

Owns the walk behind budget-aware decoding. From an automaton state it writes the first byte
the automaton allows in a fixed preference order (bytes that close structures first, then short
values), one single-byte token at a time, until the state accepts. The walk is made of real
tokens, so its length (spelled in the longest vocabulary tokens) bounds from above the tokens some
completion needs. A caller that keeps `bound(state) <= tokens left` can always finish: when a
sampled token would break it, it writes the walk's text, one spelled token per step (the rest of a
text known to complete takes one token less at each step; engine/guided.py remembers it). The walk uses only the automaton protocol (`next_state`, `is_accepting`), so it
serves the regular DFA and the context-free back end alike (whose states compare by identity,
which rules out a breadth-first search with a visited set: the walk needs none). Knows nothing
about the engine or sampling.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import ConstraintError

SPELL_BYTES = 32  # the widest token `spell` tries (whitespace runs aside, tokens are shorter)
DISTANCE_CELLS = 8_000_000  # DFA states x 256 up to which exact distances are computed
MAX_WALK = 2048  # bytes a walk may write before answering "unknown" (a constraint without an end)
# The walks' byte preferences, each then the other printable ASCII, then the rest: strings
# closed first (`"` before all), and structures closed first (`{}` rather than `{"":""}` where
# members are optional). The bound is the shorter walk: each falls by one along its own first
# token, so their minimum does too.
# `@` and `.` early end free-form parts of formats (an email's local part, a host name's labels).
POLICIES = (b'"}],:@.01{[tfnulrse-+aE', b'}]",:@.01{[tfnulrse-+aE')
RUN = 32  # after this many identical bytes in a row, a walk's next byte is another one (a loop breaks)


@dataclass
class Walk:
    """The completion written from one state."""

    text: bytes           # the bytes written (b"" when the state accepts already)
    first: int | None     # the first byte's token id (None when text is empty)

    @property
    def tokens(self) -> int:
        return len(self.text)


@dataclass
class Completions:
    """Completion walks of one compiled constraint (shared by its matchers)."""

    automaton: object
    orders: list[list[int]]              # per policy: single-byte token ids, in preference order
    by_text: dict = field(default_factory=dict)  # token bytes -> id (the vocabulary's text tokens)
    max_len: int = 1                     # bytes in the longest token
    dist: object = False                 # _distances: list per DFA state, None, or False (not made)

    def walk(self, state, limit: int = MAX_WALK) -> Walk | None:
        """The shortest of the policies' walks from `state`, or None when none is within `limit`
        bytes (a later policy walks only as far as the best one so far)."""
        best = None
        for order in self.orders:
            found = self._walk(state, order, limit if best is None else len(best.text) - 1)
            if found is not None:
                best = found
                if not found.text:
                    break
        return best

    def _walk(self, state, order: list[int], limit: int) -> Walk | None:
        """One policy's walk from `state`, or None when it is longer than `limit` bytes."""
        automaton, text, first = self.automaton, bytearray(), None
        dist = self._distances()
        run = 0  # how many times the last byte was written in a row
        while not automaton.is_accepting(state):
            if len(text) >= limit or (dist is not None and dist[state] < 0):
                return None
            for token in order:
                if run >= RUN and dist is None and self.automaton.vocab.token_bytes[token][0] == text[-1]:
                    continue
                nxt = automaton.next_state(state, token)
                if nxt is not None and (dist is None or dist[nxt] == dist[state] - 1):
                    break
            else:
                return None  # no single-byte token goes on (a vocabulary without byte tokens)
            first = token if first is None else first
            byte = self.automaton.vocab.token_bytes[token][0]
            run = run + 1 if text and text[-1] == byte else 1
            text.append(byte)
            state = nxt
        return Walk(bytes(text), first)

    def spell(self, text: bytes) -> list[int]:
        """`text` in tokens, longest vocabulary token first (at most SPELL_BYTES bytes each);
        every byte has a single-byte token, so this always spells the whole text."""
        ids, i, widest = [], 0, min(self.max_len, SPELL_BYTES)
        while i < len(text):
            for size in range(min(widest, len(text) - i), 0, -1):
                token = self.by_text.get(text[i:i + size])
                if token is not None:
                    ids.append(token)
                    i += size
                    break
            else:
                raise ValueError(f"byte {text[i]} has no token")
        return ids

    def bound(self, state) -> tuple[int, int | None] | None:
        """(tokens that surely finish from `state`, the first of them) or None when unknown:
        the walk spelled longest-token first. Spelling the walk's rest after its first token
        takes one token less, so the bound falls by one along it."""
        walk = self.walk(state)
        if walk is None:
            return None
        ids = self.spell(walk.text)
        return len(ids), (ids[0] if ids else None)



    def _distances(self):
        """A DFA back end's exact distances (single-byte tokens to an accepting state, -1: none)
        per state, made on first use; None for other back ends or DFAs over DISTANCE_CELLS.
        Why: a greedy walk can loop where the preferred byte never ends the text (`[a-z]+\\.`
        writes "t" forever); the DFA's distances make its walk a shortest one."""
        if self.dist is False:
            dfa = getattr(self.automaton, "dfa", None)
            trans = getattr(dfa, "trans", None)
            self.dist = None
            if isinstance(trans, np.ndarray) and trans.shape[0] * 256 <= DISTANCE_CELLS:
                self.dist = _dfa_distances(trans, dfa.accepting, self._byte_values())
        return self.dist

    def _byte_values(self) -> np.ndarray:
        return np.array([self.automaton.vocab.token_bytes[t][0] for t in self.orders[0]], dtype=np.int64)


def _dfa_distances(trans: np.ndarray, accepting: np.ndarray, byte_values: np.ndarray) -> list[int]:
    """Bytes to an accepting state per DFA state over `byte_values` edges (-1: none), by
    relaxing all states at once until nothing changes (iterations = the longest distance)."""
    step = trans[:, byte_values]                      # [S, B] next state per byte, -1 dead
    dist = np.where(accepting, 0, np.iinfo(np.int64).max // 2).astype(np.int64)
    while True:
        through = np.where(step >= 0, dist[np.maximum(step, 0)] + 1, np.iinfo(np.int64).max // 2)
        best = np.minimum(dist, through.min(axis=1))
        if np.array_equal(best, dist):
            break
        dist = best
    return np.where(dist >= np.iinfo(np.int64).max // 4, -1, dist).tolist()


def completions(compiled) -> Completions:
    """The Completions of a compiled constraint, made on first use and kept on it."""
    found = compiled.completions
    if found is None:
        vocab = compiled.vocab
        by_text: dict[bytes, int] = {}
        for i, b in enumerate(vocab.token_bytes):
            if b and i not in vocab.eos_ids:
                by_text.setdefault(b, i)
        singles = {b[0]: i for b, i in by_text.items() if len(b) == 1}
        orders = [[singles[b] for b in sorted(singles, key=lambda b, p=policy: _rank(p, b))] for policy in POLICIES]
        found = Completions(compiled.automaton, orders, by_text,
                            max_len=max((len(b) for b in by_text), default=1))
        compiled.completions = found
    return found


def needed_tokens(compiled) -> int | None:
    """Tokens that surely write a complete output of the constraint from its start (the end token
    not counted: an output complete when max_tokens runs out is complete), or None when the walk
    finds no end within MAX_WALK bytes; computed once per compiled constraint."""
    if "needed_tokens" not in compiled.stats:
        found = completions(compiled).bound(compiled.automaton.initial_state())
        compiled.stats["needed_tokens"] = None if found is None else found[0]
    return compiled.stats["needed_tokens"]


def check_budget(compiled, max_tokens: int) -> None:
    """Refuse (ConstraintError) a max_tokens too small for the constraint's shortest output found."""
    needed = needed_tokens(compiled)
    if needed is not None and needed > max_tokens:
        raise ConstraintError(f"max_tokens {max_tokens} cannot hold a complete output of this constraint: "
                              f"the shortest one found takes {needed} tokens; "
                              f"raise max_tokens to at least {needed}")


def _rank(policy: bytes, b: int) -> int:
    return policy.index(b) if b in policy else len(policy) + (b if 0x20 < b < 0x7F else 256 + b)
