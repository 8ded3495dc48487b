"""Masks of the context-free TokenAutomaton: which tokens its threads allow.

Owns `fill_mask` and the recursion behind it (CfgMasks, a mixin of
CfgAutomaton): per thread, the cached run of its DFA state over a scope
(scan.py), the head / literal reads before the DFA (heads.py,
literal_runs.py), and one Earley step per (thread, recursion level) for the
tokens that cross a lexeme boundary, memoized on item sets. Uses the
automaton's stepping (`_after`, `_dfa_state`) and
per-lexeme tables (`lexemes`, `_heads`, `_literals`, `_head_follow`) but not
how bytes are stepped; never loops over the vocabulary.
"""

from __future__ import annotations

import time

import numpy as np

from ..regular.mask_bits import or_ids
from ..vocab import Vocabulary
from .earley import Chart
from .scan.literal_runs import literal_scope
from .scan.cache import MAX_ENTRIES, ROOT, ScanCache
from .scan.state_masks import recall, remember, state_key, state_masks
from .threads import HEAD, STUCK, CfgState


def scan_cache(vocab: Vocabulary) -> ScanCache:
    """The vocabulary's shared scan cache; replaced by a fresh one once it grows
    past MAX_ENTRIES (memos keyed by scope ids carry the cache's identity)."""
    cache = vocab.mask_cache.get("cfg_scan")
    if cache is None or cache.entries > MAX_ENTRIES:
        cache = vocab.mask_cache["cfg_scan"] = ScanCache(vocab)
    return cache


MAX_CANON_IDS = 1 << 16
WARM_FIRST_STATES = 8  # _warm_inside: lexemes whose first byte leads to more states are skipped


class CfgMasks:
    """Mask exploration for CfgAutomaton (see the module docstring)."""

    _canon_ids: dict

    def fill_mask(self, state: CfgState, row: np.ndarray) -> None:
        key = state_key(self.uid, state.chart, state.threads)
        if key is not None:
            remembered = state_masks(self.vocab)
            if recall(remembered, key, row):
                return
        self._compute_mask(state, row)
        if key is not None:
            remember(remembered, key, row)

    def _scan_context(self) -> tuple:
        """(the vocabulary's scan cache, follow-set id per lexeme): one snapshot per mask."""
        scans = scan_cache(self.vocab)
        ctx = self._follow_ids
        if ctx[0] is not scans:
            ctx = self._follow_ids = (scans, [scans.follow_id(f) for f in self.follow_bytes])
        return ctx

    def precompute_masks(self, budget_s: float = 0.05) -> int:
        """Build ahead of use, lexeme by lexeme until `budget_s` is spent, what a lexeme's
        first thread needs in a mask: its head entries, its DFA and the run of its start
        over the whole vocabulary; then, budget left, the lookups where a token may end inside
        its head or literal (_warm_inside). Returns how many lexemes are ready.

        Why: a lexeme is otherwise built inside the first token step that starts it (0.3-3 ms
        each, several at once where an object's optional properties all start), which made
        most of the slowest token steps on MaskBench. What a mask still computes on first
        use: Earley steps and runs from inside lexemes (they depend on the text read)."""
        deadline = time.perf_counter() + budget_s
        ctx = self._scan_context()
        ready = 0
        for lex, start in enumerate(self._starts):
            if time.perf_counter() > deadline:
                return ready
            self._warm_lexeme(ctx, lex, start if start is not None else self._prepare(lex))
            ready += 1
        for lex in range(len(self._starts)):  # then, budget left, where a token may end inside
            if time.perf_counter() > deadline:
                break
            self._warm_inside(ctx, lex)
        return ready

    def _warm_lexeme(self, ctx, lex: int, start: int) -> None:
        """Lexeme `lex`'s DFA and the run of its start code over the whole vocabulary."""
        lexeme = self._built_lexeme(lex)
        scans, follow_ids = ctx
        q = start
        if q < 0:  # the head or literal run first, as _explore does (results cached in scans)
            q = self._before_dfa(scans, lex, q, ROOT, [], [], {})
            if q is None:
                return
        scans.run(lexeme.digest, lexeme.trans, lexeme.accepting, q, ROOT, follow_ids[lex])

    def _warm_inside(self, ctx, lex: int) -> None:
        """Where a token may end inside lexeme `lex`: its head states and literal positions (a
        property name read in two tokens), the DFA state right after the literal (or, without
        head and literal, the few states after its first byte). Computes their lookups and
        runs over the whole vocabulary, cached per head state, literal and state language:
        what _before_dfa and _explore would compute there on first use."""
        (scans, follow_ids), head, literal = ctx, self._heads[lex], self._literals[lex]
        if head:
            for h in range(1, len(head[0].accepting)):
                self._before_dfa(scans, lex, HEAD - h, ROOT, [], [], {})
        for i in range(1, len(literal)):
            self._before_dfa(scans, lex, -1 - i, ROOT, [], [], {})
        lexeme = self.lexemes[lex]
        if literal:
            q = self._dfa_state(lex, len(literal))  # a token ending the literal: `":`
            states = [] if q is None else [q]
        elif not head:  # a token ending after the first byte: ` "` before a string value
            row = lexeme.trans[lexeme.start]
            states = sorted(set(row[row >= 0].tolist()))
            states = states if len(states) <= WARM_FIRST_STATES else []
        else:
            states = []
        for q in states:
            scans.run(lexeme.digest, lexeme.trans, lexeme.accepting, q, ROOT, follow_ids[lex])

    def _compute_mask(self, state: CfgState, row: np.ndarray) -> None:
        rows: list[np.ndarray] = []
        ids: list[np.ndarray] = []
        ctx = self._scan_context()
        self._explore(ctx, state.chart, state.threads, ROOT, rows, ids)
        if rows:
            np.copyto(row, rows[0])
            for extra in rows[1:]:
                np.bitwise_or(row, extra, out=row)
        else:
            row[:] = 0
        if ids:  # ids repeat across runs (or_ids allows that)
            or_ids(row, ids[0] if len(ids) == 1 else np.concatenate(ids), self.vocab)

    def _explore(self, ctx, chart: Chart, threads, scope: int, rows: list, ids: list) -> None:
        """Collect tokens of `scope` allowed from (chart, threads)."""
        lexemes, (scans, follow_ids) = self.lexemes, ctx
        heads: dict = {}  # head runs of this scope, shared by the threads in one head state
        for lex, origin, q in threads:
            lexeme = lexemes[lex]
            if q < 0:
                q = self._before_dfa(scans, lex, q, scope, rows, ids, heads)
                if q is None:
                    continue
            run = scans.run(lexeme.digest, lexeme.trans, lexeme.accepting, q, scope, follow_ids[lex])
            if run.inside_row is not None:
                rows.append(run.inside_row)
            elif run.inside_ids.size:
                ids.append(run.inside_ids)
            if run.child is not None:
                found = self._after_lexeme(ctx, chart, lex, origin, run.child)
                if found.size:
                    ids.append(found)

    def _before_dfa(self, scans, lex: int, q: int, scope: int, rows: list, ids: list,
                    heads: dict) -> int | None:
        """A thread not yet in its lexeme's DFA (head, literal, start): add what it
        allows from `scope` to rows / ids and return None, or return the DFA state to
        run from when some entry reads past the literal."""
        if q == STUCK:
            return None
        if HEAD >= q:
            head, literal = self._heads[lex]
            h = HEAD - q
            # Threads in one head state whose literals start alike (the remaining optional
            # properties of an object: ~80 in MaskBench's big ones) share the head run and
            # its inside tokens; only the literals differ.
            group = (id(head), h, literal[0])
            shared = heads.get(group)
            if shared is None:
                run = scans.run(head.digest, head.trans, head.accepting, h, scope,
                                scans.follow_id(self._head_follow[lex]))
                shared = heads[group] = [run, False]
            # what the literal adds after this head state, kept per (head, state, scope,
            # literal): the next object position asks again for all but one of the literals
            memo_key = (head.digest, h, scope, literal)
            got = scans.head_literals.get(memo_key)
            if got is None:
                got = scans.head_literals[memo_key] = _head_literal(scans, shared[0], head, h, scope,
                                                                    literal)
            found, goes_on = got
            if goes_on:
                q2 = self._dfa_state(lex, 0, h)
                if q2 is not None:
                    return q2
            if not shared[1]:  # the head's own tokens, once per group
                shared[1] = True
                if run.inside_row is not None:
                    rows.append(run.inside_row)
                elif run.inside_ids.size:
                    ids.append(run.inside_ids)
            if found.size:
                ids.append(found)
            return None
        i, literal = -1 - q, self._literals[lex]
        if i >= len(literal):
            return self.lexemes[lex].start
        found, goes_on = literal_scope(scans, scope, literal[i:])
        q2 = self._dfa_state(lex, i) if goes_on else None
        if q2 is None and found.size:  # no entry reads past the literal (or a dead end after it)
            ids.append(found)
        return q2

    def _after_lexeme(self, ctx, chart: Chart, lex: int, origin: int, scope: int) -> np.ndarray:
        """Token ids of `scope` allowed right after lexeme `lex` (from set `origin`)
        ends. Memoized on item sets: the last set of a chart determines the chart."""
        canon_key = (chart[origin].sid, lex, scope, ctx[0].generation)
        if canon_key[0] >= 0:
            found = self._canon_ids.get(canon_key)
            if found is not None:
                return found
        item_set, threads = self._after(chart, (lex, origin))
        memo_key = ("ids", ctx[0].generation, scope)  # never equal to a completion key (_after)
        found = item_set.memo.get(memo_key)
        if found is None:
            local: list[np.ndarray] = []
            self._explore(ctx, chart.append(item_set), threads, scope, [], local)
            # duplicates are fine here (fill_mask dedups once); sorting per level is not
            found = local[0] if len(local) == 1 else np.concatenate(local) if local else _NO_IDS
            item_set.memo[memo_key] = found
        if canon_key[0] >= 0:
            if len(self._canon_ids) >= MAX_CANON_IDS:
                self._canon_ids.clear()
            self._canon_ids[canon_key] = found
        return found


def _head_literal(scans, run, head, h: int, scope: int, literal: bytes) -> tuple[np.ndarray, bool]:
    """(token ids of `scope` that end inside the literal after head state h's run, whether
    some entry reads past the literal)."""
    found, goes_on = (_NO_IDS, False) if run.child is None else literal_scope(scans, run.child, literal)
    if head.accept_list[h]:  # the head may end here: the literal starts at offset 0
        now, now_on = literal_scope(scans, scope, literal)
        found, goes_on = np.concatenate([found, now]), goes_on or now_on
    return found, goes_on


_NO_IDS = np.zeros(0, dtype=np.int32)
