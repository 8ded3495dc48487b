"""The context-free TokenAutomaton: Earley over lexemes + lexeme DFAs over bytes.

A state is the Earley chart so far plus the lexer *threads*: (lexeme, origin
set, DFA state) for every lexeme being read, one per way of splitting the
text (the dynamic lexing of "terminals expanded in place"). After each byte
every thread steps its DFA; threads in an accepting state also complete their
lexeme, which builds a new item set and starts threads for the lexemes it
expects (the old thread goes on too: a lexeme may be longer). A new thread
does not touch its lexeme's DFA (lexeme.py builds it lazily, tens of ms) until
it must: it waits at the start, or reads a leading literal, or a shared head
DFA then a literal (heads.py), byte by byte, and masks there come from the
sorted vocabulary (literal_runs.py).

Masks are exact: a token is allowed iff some thread reads it entirely (then a
completion exists: DFAs are trimmed and Earley items are viable prefixes of a
grammar whose rules are all productive) or some thread accepts in the middle
of it and the rest of the token is allowed after completing that lexeme. The
first part is a cached per-(DFA, state) vector (scan.py); the second recurses
only on the tokens that cross a boundary, with one Earley step per
(thread, recursion level), never a loop over the vocabulary. This module owns
the byte steps; the masks are automaton_masks.py (CfgMasks), the state and its
thread codes threads.py.
"""

from __future__ import annotations

import numpy as np

from ..vocab import Vocabulary
from .automaton_masks import CfgMasks
from .earley import Chart, Parser
from .follow import follow_first_bytes
from .lexemes import Bnf, lexeme_index
from .heads import head_for, install_composed
from .scan.literal_runs import expr_literal
from .scan.cache import ScanCache
from .scan.state_masks import automaton_uid
from .threads import AT_START, HEAD, STUCK, CfgState

MAX_FORCED = 4096
MAX_MEMOS = 1 << 14  # lexeme completions memoized per epoch (MaskBench's biggest case makes 1,876)


class CfgAutomaton(CfgMasks):
    """TokenAutomaton for a grammar split into lexemes and BNF (see lexemes.py)."""

    def __init__(self, bnf: Bnf, vocab: Vocabulary) -> None:
        self.bnf = bnf
        self.vocab = vocab
        self.uid = automaton_uid()  # names its states in the shared mask memo (state_masks.py)
        self.parser = Parser(bnf)
        self.lexemes = bnf.lexemes
        self.follow_bytes = follow_first_bytes(bnf, self.parser.nullable)
        self._follow_ids: tuple[ScanCache | None, list[int]] = (None, [])
        self._live: dict[tuple[int, int], tuple[int, ...]] = {}
        # Per lexeme, filled by _prepare when its first thread starts (None until then): the
        # shared head and literal (heads.py), the literal read before the DFA, the thread's
        # start code and the head's follow set. Why lazy: a new property-key set builds a new
        # head DFA (~1-2 ms), and most lexemes of a schema are not reached by the first mask.
        count = len(bnf.lexemes)
        self._heads: list = [None] * count
        self._literals: list = [None] * count
        self._starts: list = [None] * count
        self._head_follow: list = [None] * count
        self._at_literal: dict[tuple[int, int], int | None] = {}
        self._epoch, self._memos = 0, 0  # lexeme completions memoized on sets (_after)
        self._canon_ids: dict = {}
        self._initial = self._with_new_threads(self.parser.initial_chart(), ())

    def _prepare(self, lex: int) -> int:
        """Fill lexeme `lex`'s head entries (idempotent; the start code is written last, so
        a thread that sees it sees the rest); returns its start code."""
        expr = self.lexemes[lex].expr
        head = head_for(expr)
        self._heads[lex] = head
        self._literals[lex] = head[1] if head else expr_literal(expr)
        self._head_follow[lex] = None if head is None else np.arange(256) == head[1][0]
        start = self._starts[lex] = HEAD if head else AT_START
        return start

    def prepare_all(self) -> None:
        """Fill every lexeme's head entries now (for tests and tools that inspect them)."""
        for lex, start in enumerate(self._starts):
            if start is None:
                self._prepare(lex)

    # ------------------------------------------------------------- stepping
    def _with_new_threads(self, chart: Chart, threads: tuple) -> CfgState:
        k = len(chart) - 1
        starts = self._starts
        new = []
        for s in chart[k].lexemes:
            lex = lexeme_index(s)
            start = starts[lex]
            new.append((lex, k, start if start is not None else self._prepare(lex)))
        return CfgState(chart, threads + tuple(new), True)

    def _complete(self, chart: Chart, done: list[tuple[int, int]]) -> Chart:
        seeds: list = []
        for lex, origin in done:
            seeds.extend(self.parser.scanned(chart, -(lex + 1), origin))
        return self.parser.advance(chart, seeds)

    def _step(self, state: CfgState, byte: int) -> CfgState | None:
        lexemes = self.lexemes
        moved, done = [], []
        literals = self._literals
        for lex, origin, q in state.threads:
            lexeme = lexemes[lex]
            if q < 0:
                if HEAD >= q > STUCK:  # in the shared head; the literal starts where it ends
                    head, literal = self._heads[lex]
                    h = HEAD - q
                    if byte == literal[0] and head.accept_list[h]:
                        moved.append((lex, origin, -2))
                    else:
                        h2 = head.row(h)[byte]
                        if h2 >= 0:
                            moved.append((lex, origin, HEAD - h2))
                    continue
                i, literal = -1 - q, literals[lex]
                if i < len(literal):  # inside the literal: no accepting state before its end
                    if byte != literal[i]:
                        continue
                    if i + 1 < len(literal):
                        moved.append((lex, origin, q - 1))
                        continue
                    q2 = self._dfa_state(lex, i + 1)
                    if q2 is None:  # the DFA failed to build: a dead end, as masks said
                        moved.append((lex, origin, STUCK))
                        continue
                    moved.append((lex, origin, q2))
                    if lexeme.accept_list[q2]:
                        done.append((lex, origin))
                    continue
                if q == STUCK or not lexeme.first_bytes[byte]:
                    continue
                q = lexeme.start
            row = lexeme.rows.get(q)
            q2 = (row if row is not None else lexeme.row(q))[byte]
            if q2 < 0:
                continue
            moved.append((lex, origin, q2))
            if lexeme.accept_list[q2]:
                done.append((lex, origin))
        if not done:
            return CfgState(state.chart, tuple(moved), False) if moved else None
        item_set, threads = self._after(state.chart, done[0] if len(done) == 1 else tuple(done))
        return CfgState(state.chart.append(item_set), tuple(moved) + threads, True)

    def _after(self, chart: Chart, key: tuple) -> tuple:
        """(the item set after lexeme key = (lex, origin) ends, or the lexemes of a tuple of
        such keys end together, the threads it starts), memoized on the chart's last set
        (which determines the chart). Shared by masks (automaton_masks._after_lexeme) and
        steps, so the state a token leads to holds the very set its mask explored, with what
        was remembered on it (measured on MaskBench: steps over 395 us -20%).

        Bounded by epochs: memoized sets chain every path served to the cached initial set,
        so after MAX_MEMOS new entries the epoch moves on, and a set first touched in a new
        epoch forgets its memo; the old chains, cut where they hang from sets still in use
        (the initial set is touched by every request), are then garbage."""
        last = chart[len(chart) - 1]
        memo = last.memo
        if last.memo_epoch != self._epoch:
            memo.clear()
            last.memo_epoch = self._epoch
        after = memo.get(key)
        if after is None:
            next_chart = self._complete(chart, [key] if isinstance(key[0], int) else list(key))
            item_set = next_chart[len(chart)]
            item_set.memo_epoch = self._epoch
            after = memo[key] = (item_set, self._with_new_threads(next_chart, ()).threads)
            self._memos += 1
            if self._memos >= MAX_MEMOS:
                self._epoch, self._memos = self._epoch + 1, 0
        return after

    def initial_state(self) -> CfgState:
        return self._initial

    def advance_bytes(self, state: CfgState, data: bytes) -> CfgState | None:
        for byte in data:
            state = self._step(state, byte)
            if state is None:
                return None
        return state

    def next_state(self, state: CfgState, token_id: int) -> CfgState | None:
        if not 0 <= token_id < self.vocab.size:
            return None
        data = self.vocab.token_bytes[token_id]
        return self.advance_bytes(state, data) if data else None

    def is_accepting(self, state: CfgState) -> bool:
        return state.fresh and state.chart[len(state.chart) - 1].accepting

    def forced_bytes(self, state: CfgState) -> bytes:
        """Bytes every continuation starts with: while the state cannot end and all
        threads together allow exactly one next byte."""
        out = bytearray()
        while not self.is_accepting(state) and len(out) < MAX_FORCED and state.threads:
            nxt: set[int] = set()
            for lex, _, q in state.threads:
                nxt.update(self._live_bytes(lex, q))
                if len(nxt) > 1:
                    break
            if len(nxt) != 1:
                break
            byte = nxt.pop()
            state = self._step(state, byte)
            if state is None:
                break
            out.append(byte)
        return bytes(out)

    def _built_lexeme(self, lex: int):
        """Lexeme `lex` with its DFA built: from the shared head and parts when it has a head
        (heads.install_composed), else its own build (prepared lexemes only)."""
        lexeme, head = self.lexemes[lex], self._heads[lex]
        if head and "trans" not in lexeme.__dict__:
            install_composed(lexeme, head[1], head[0])
        lexeme.build()  # no-op once built
        return lexeme

    def _dfa_state(self, lex: int, i: int, head_state: int | None = None) -> int | None:
        """The DFA state after the first i bytes of the lexeme's literal (after a head
        match, if any), or in head state `head_state` (builds the DFA); None if that
        leads nowhere (only when the DFA failed to build)."""
        key = (lex, i, head_state)
        if key not in self._at_literal:
            lexeme, head = self._built_lexeme(lex), self._heads[lex]
            if head_state is not None:
                data = head[0].path_to(head_state)
            else:
                data = (head[0].via if head else b"") + self._literals[lex][:i]
            q = lexeme.start
            for byte in data:
                q = int(lexeme.trans[q, byte])
                if q < 0:
                    break
            self._at_literal[key] = q if q >= 0 else None
        return self._at_literal[key]

    def _live_bytes(self, lex: int, q: int) -> tuple[int, ...]:
        if q == STUCK:
            return ()
        if HEAD >= q:
            head, literal = self._heads[lex]
            h = HEAD - q
            live = {b for b, t in enumerate(head.row(h)) if t >= 0}
            return tuple(sorted(live | ({literal[0]} if head.accept_list[h] else set())))
        if q < 0:
            literal = self._literals[lex]
            if -1 - q < len(literal):
                return (literal[-1 - q],)
            q = self.lexemes[lex].start
        key = (lex, q)
        got = self._live.get(key)
        if got is None:
            got = self._live[key] = tuple(np.flatnonzero(self.lexemes[lex].trans[q] >= 0).tolist())
        return got
