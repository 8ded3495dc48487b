"""An Earley recognizer over lexemes, one item set per lexeme boundary.

Owns item sets (prediction, completion with the Aycock-Horspool treatment of
nullable nonterminals) and the persistent chart that parser states share.
Lexemes are scanned from outside: the lexer (automaton.py) reports "lexeme L
that started at set o ends here" and `Parser.advance` builds the next set.
Handles left recursion and ambiguity. Knows nothing about bytes or tokens.
"""

from __future__ import annotations

import itertools
from array import array
from dataclasses import dataclass, field

from .lexemes import START, Bnf

MAX_INTERNED = 1 << 13  # item sets remembered per parser before the table restarts (MaskBench
# cases use at most ~700; a few MB per parser at most)


@dataclass(eq=False, slots=True)  # slots: no per-set __dict__ (sets are built inside mask steps)
class ItemSet:
    """Items at one boundary, indexed by next symbol. An item is one int, `dotted rule id
    | origin set << Parser.shift` (not a tuple: item sets are built inside mask steps,
    and ints are neither allocated as containers nor scanned by the cyclic GC)."""

    waiting: dict[int, list[int]] = field(default_factory=dict)
    accepting: bool = False          # S' -> start . from set 0 is here
    lexemes: tuple[int, ...] = ()    # lexeme symbols expected next
    # (lexeme, origin), or a tuple of those ending together -> (next ItemSet, threads)
    # (automaton._after); ("ids", scan generation, scope) -> token ids
    memo: dict = field(default_factory=dict)
    memo_epoch: int = 0  # the automaton's memo epoch `memo` was filled in (automaton._after)
    # This set's own predictions: dotted ids (origin: this set) by next symbol. Shared between
    # sets that predict the same nonterminals (Parser.predictions), never written to.
    predicted: dict[int, tuple[int, ...]] = field(default_factory=dict)
    # Canonical id: equal for two sets (of any charts) with the same items once each origin
    # index is replaced by its set's id, so everything that follows from them is equal too
    # (state_masks.py keys whole masks on it); -1 when not interned. The initial set is 0.
    sid: int = -1


class Chart:
    """Item sets 0..n-1, shared copy-on-write between parser states."""

    __slots__ = ("base", "n", "extra")

    def __init__(self, base: list, n: int, extra: tuple = ()) -> None:
        self.base, self.n, self.extra = base, n, extra

    def __len__(self) -> int:
        return self.n + len(self.extra)

    def __getitem__(self, i: int) -> ItemSet:
        return self.base[i] if i < self.n else self.extra[i - self.n]

    def append(self, item_set: ItemSet) -> "Chart":
        if not self.extra:
            if len(self.base) == self.n:
                self.base.append(item_set)  # nobody else sees index n yet...
            if self.base[self.n] is item_set:  # ...unless another thread appended first (or it
                return Chart(self.base, self.n + 1)  # is there already: a memoized set)
        extra = self.extra + (item_set,)
        if len(extra) > 32:  # flatten: one copy per 32 boundaries
            return Chart(self.base[: self.n] + list(extra), self.n + len(extra))
        return Chart(self.base, self.n, extra)


class Parser:
    """Dotted rules of a Bnf, precomputed as flat tables."""

    def __init__(self, bnf: Bnf) -> None:
        self.bnf = bnf
        num_nt = len(bnf.names)
        self.by_lhs: list[list[int]] = [[] for _ in range(num_nt)]   # nt -> first dotted id
        self.next_symbol: list[int | None] = []                       # dotted id -> symbol
        self.lhs_of: list[int] = []
        for lhs, rhs in bnf.productions:
            self.by_lhs[lhs].append(len(self.next_symbol))
            for i in range(len(rhs) + 1):
                self.next_symbol.append(rhs[i] if i < len(rhs) else None)
                self.lhs_of.append(lhs)
        # item = dotted id | origin << shift; item + 1 advances the dot (a dotted id + 1
        # of an item that is not complete is still below 1 << shift)
        self.shift = max(1, len(self.next_symbol).bit_length())
        self.dotted_mask = (1 << self.shift) - 1
        self.nullable = _nullable(bnf, num_nt)
        self._prepare_predictions(bnf, num_nt)
        self._sids: dict[bytes, int] = {}
        self._next_sid = itertools.count(1)  # never reused, also across a restart of _sids

    def _prepare_predictions(self, bnf: Bnf, num_nt: int) -> None:
        """Static part of every item set: the items a prediction of X adds all have
        origin "this set", so their closure (prediction, and advancing over nullable
        nonterminals) is the same everywhere and is computed once here."""
        own: list[list[tuple[int, int]]] = [[] for _ in range(num_nt)]  # nt -> (symbol, dotted id)
        self.own_complete = [False] * num_nt
        for (lhs, rhs), first in zip(bnf.productions, self._first_dotted(bnf)):
            for i in range(len(rhs) + 1):
                if i == len(rhs):
                    self.own_complete[lhs] = True
                else:
                    own[lhs].append((rhs[i], first + i))
                if i == len(rhs) or rhs[i] < 0 or not self.nullable[rhs[i]]:
                    break
        self.own = own
        self._predicted: dict[frozenset, tuple[dict, tuple]] = {}
        self.reach: list[tuple[int, ...]] = []
        for x in range(num_nt):
            seen, todo = [x], [x]
            while todo:
                for sym, _ in own[todo.pop()]:
                    if sym >= 0 and sym not in seen:
                        seen.append(sym)
                        todo.append(sym)
            self.reach.append(tuple(seen))

    def _first_dotted(self, bnf: Bnf) -> list[int]:
        out, at = [], 0
        for _lhs, rhs in bnf.productions:
            out.append(at)
            at += len(rhs) + 1
        return out

    def initial_chart(self) -> Chart:
        predicted, lexemes = self.predictions(frozenset([START]))
        return Chart([ItemSet({}, self.nullable[START], lexemes, predicted=predicted, sid=0)], 1)

    def predictions(self, xs: frozenset) -> tuple[dict[int, tuple[int, ...]], tuple[int, ...]]:
        """(dotted ids by next symbol, lexeme symbols among those) of the items a set adds
        by predicting the nonterminals `xs` (and all they reach). Cached: the same for
        every set that predicts them, whatever its index. Why: a big schema predicts
        hundreds of items at each property, and copying them into each set (with its
        origin) was most of the parser's time."""
        got = self._predicted.get(xs)
        if got is None:
            grouped: dict[int, list[int]] = {}
            seen: set[int] = set()
            for x in sorted(xs):
                for y in self.reach[x]:
                    if y not in seen:
                        seen.add(y)
                        for sym, d in self.own[y]:
                            grouped.setdefault(sym, []).append(d)
            got = self._predicted[xs] = ({sym: tuple(ds) for sym, ds in grouped.items()},
                                         tuple(sym for sym in grouped if sym < 0))
        return got

    def waiting_for(self, item_set: ItemSet, origin: int, symbol: int) -> list[int]:
        """Items of set `origin` (item_set) whose next symbol is `symbol`."""
        own = item_set.predicted.get(symbol)
        if not own:
            return item_set.waiting.get(symbol, [])
        at = origin << self.shift
        return item_set.waiting.get(symbol, []) + [d | at for d in own]

    def scanned(self, chart: Chart, lexeme_symbol: int, origin: int) -> list[int]:
        """Seeds for the next set: items at `origin` waiting for the lexeme, advanced."""
        return [item + 1 for item in self.waiting_for(chart[origin], origin, lexeme_symbol)]

    def advance(self, chart: Chart, seeds: list[int]) -> Chart:
        return chart.append(self.build(chart, len(chart), seeds))

    def build(self, chart: Chart, k: int, seeds) -> ItemSet:
        """Close `seeds` (items from earlier sets, advanced) into set k: completion
        through earlier sets is dynamic, prediction comes from the static tables."""
        next_symbol, lhs_of, nullable = self.next_symbol, self.lhs_of, self.nullable
        mask, shift = self.dotted_mask, self.shift
        seen = set(seeds)
        todo = list(seen)
        waiting: dict[int, list[int]] = {}
        xs: dict[int, None] = {}  # nonterminals predicted here, in order (predictions() adds their reach)
        accepting = False
        while todo:
            item = todo.pop()
            d = item & mask
            sym = next_symbol[d]
            if sym is None:  # complete: advance the items at o waiting for lhs
                lhs = lhs_of[d]
                o = item >> shift    # o < k always: items of this set's own origin are static
                if lhs == START and o == 0:
                    accepting = True
                at = chart[o]
                for waiter in at.waiting.get(lhs, ()):
                    new = waiter + 1
                    if new not in seen:
                        seen.add(new)
                        todo.append(new)
                own = at.predicted.get(lhs)
                if own:
                    origin = (o << shift) + 1
                    for d in own:
                        new = d + origin
                        if new not in seen:
                            seen.add(new)
                            todo.append(new)
                continue
            lst = waiting.get(sym)
            if lst is None:
                waiting[sym] = [item]
            else:
                lst.append(item)
            if sym >= 0:
                xs[sym] = None
                if nullable[sym]:
                    new = item + 1
                    if new not in seen:
                        seen.add(new)
                        todo.append(new)
        own, own_lexemes = self.predictions(frozenset(xs)) if xs else ({}, ())
        lexemes = tuple(dict.fromkeys([s for s in waiting if s < 0] + list(own_lexemes)))
        return ItemSet(waiting, accepting, lexemes, predicted=own,
                       sid=self._intern(chart, waiting, accepting))

    def _intern(self, chart: Chart, waiting: dict[int, list[int]], accepting: bool) -> int:
        """The canonical id of a set with these items (see ItemSet.sid). Its predictions
        follow from `waiting`, its completed items matter only through `accepting`.
        Why bytes: the key is kept, and bytes are not scanned by the cyclic GC."""
        shift, mask = self.shift, self.dotted_mask
        of_origin: dict[int, int] = {}
        canon = []
        for items in waiting.values():
            for item in items:
                o = item >> shift
                sid = of_origin.get(o)
                if sid is None:
                    sid = of_origin[o] = chart[o].sid
                    if sid < 0:
                        return -1
                canon.append((item & mask) | (sid << shift))
        canon.sort()
        try:
            key = array("Q", canon).tobytes() + (b"\1" if accepting else b"\0")
        except OverflowError:  # ids past 2**64 >> shift: stop interning
            return -1
        sids = self._sids
        sid = sids.get(key)
        if sid is None:
            if len(sids) >= MAX_INTERNED:
                sids.clear()  # later equal sets get new ids: less sharing, never a wrong one
            # setdefault and the counter are atomic: two threads never give one id to two keys
            sid = sids.setdefault(key, next(self._next_sid))
        return sid


def _nullable(bnf: Bnf, num_nt: int) -> list[bool]:
    nullable = [False] * num_nt
    changed = True
    while changed:
        changed = False
        for lhs, rhs in bnf.productions:
            if not nullable[lhs] and all(s >= 0 and nullable[s] for s in rhs):
                nullable[lhs] = True
                changed = True
    return nullable
