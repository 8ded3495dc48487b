"""Suffix drafts: the longest earlier match of a sequence's suffix, of any length, and what followed.

Token n-grams (drafts.py) match at most `max_ngram` tokens; a suffix automaton matches the longest
suffix of the sequence that occurred before, however long, in
  1. the sequence's own prompt + output (`OwnSuffixes`: code and documents repeat long spans), and
  2. the finished outputs of requests of the same group (`SuffixPool`): the same constraint, or for
     unconstrained requests the same prompt prefix (one template, one system prompt): outputs of
     one schema repeat whole runs of structure and common values.
The draft is the continuation of the first occurrence of that suffix; the match length goes into
the draft's confidence key, so longer matches earn their own (learned) confidence.

The automaton (Blumer et al.) is built online, O(1) amortized per appended token: every state is a
class of substrings with the same end positions, `link` points to the longest suffix in another
class, `first` is the end of its first occurrence. For the own stream, which the automaton itself
contains, the longest suffix that occurred earlier is the class `link[last]`. The pool's automaton
runs over its outputs joined by separators (negative ids, unique per output, so no match spans
two); a sequence's match in it is tracked token by token and rebuilt after the pool grows.
Deterministic. Knows nothing about models, masks or sampling.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field


@dataclass
class SuffixAutomaton:
    tokens: list[int] = field(default_factory=list)
    next: list[dict[int, int]] = field(default_factory=lambda: [{}])
    link: list[int] = field(default_factory=lambda: [-1])
    length: list[int] = field(default_factory=lambda: [0])
    first: list[int] = field(default_factory=lambda: [-1])   # end position of the first occurrence
    last: int = 0
    prompt_length: int = 0    # (own streams: the prompt's tokens come first)

    def extend(self, new: list[int]) -> None:
        for token in new:
            self._append(token)

    def _append(self, token: int) -> None:
        nxt, link, length, first = self.next, self.link, self.length, self.first
        position = len(self.tokens)
        self.tokens.append(token)
        cur = len(length)
        nxt.append({})
        length.append(length[self.last] + 1)
        link.append(0)
        first.append(position)
        p = self.last
        while p != -1 and token not in nxt[p]:
            nxt[p][token] = cur
            p = link[p]
        if p != -1:
            q = nxt[p][token]
            if length[p] + 1 == length[q]:
                link[cur] = q
            else:
                clone = len(length)
                nxt.append(dict(nxt[q]))
                length.append(length[p] + 1)
                link.append(link[q])
                first.append(first[q])
                while p != -1 and nxt[p].get(token) == q:
                    nxt[p][token] = clone
                    p = link[p]
                link[q] = link[cur] = clone
        self.last = cur

    def earlier_match(self) -> tuple[int, int]:
        """(length, end position of its first occurrence) of the longest suffix of the whole stream
        that also ends earlier; (0, -1) when none."""
        state = self.link[self.last]
        if state <= 0:
            return 0, -1
        return self.length[state], self.first[state]

    def walk(self, state: int, matched: int, token: int) -> tuple[int, int]:
        """(state, matched length) after `token`, from the longest match ending before it."""
        nxt, link, length = self.next, self.link, self.length
        while state > 0 and token not in nxt[state]:
            state = link[state]
            matched = length[state]
        if token in nxt[state]:
            return nxt[state][token], matched + 1
        return 0, 0


class OwnSuffixes:
    """One automaton per sequence over its prompt + output."""

    def __init__(self) -> None:
        self._streams: dict[object, SuffixAutomaton] = {}

    def observe(self, key: object, prompt: list[int], output: list[int]) -> None:
        auto = self._streams.get(key)
        if auto is None:
            auto = self._streams[key] = SuffixAutomaton()
            auto.extend(prompt)
            auto.prompt_length = len(prompt)
        done = len(auto.tokens) - auto.prompt_length
        if done < len(output):
            auto.extend(output[done:])

    def propose(self, key: object, limit: int, min_match: int) -> tuple[list[int], int] | None:
        """(tokens[:limit] after the first earlier occurrence of the longest suffix, its length)."""
        auto = self._streams.get(key)
        if auto is None or limit <= 0:
            return None
        matched, end = auto.earlier_match()
        if matched < min_match:
            return None
        tokens = auto.tokens[end + 1:end + 1 + limit]
        return (tokens, matched) if tokens else None

    def release(self, key: object) -> None:
        self._streams.pop(key, None)


@dataclass
class _Group:
    auto: SuffixAutomaton = field(default_factory=SuffixAutomaton)
    outputs: list[list[int]] = field(default_factory=list)   # newest last, as in the automaton
    version: int = 0


@dataclass
class _Match:
    group: object
    version: int
    state: int = 0
    matched: int = 0
    seen: int = 0                   # tokens of the sequence walked so far


class SuffixPool:
    """Finished outputs per group, `pool_tokens` each at most (oldest dropped: the automaton is
    rebuilt from the newest outputs), `max_groups` groups (least recently used dropped)."""

    REMATCH = 64   # tokens of a sequence re-walked when its group's automaton changed

    def __init__(self, pool_tokens: int = 8192, max_groups: int = 64) -> None:
        self.pool_tokens, self.max_groups = pool_tokens, max_groups
        self._groups: OrderedDict[object, _Group] = OrderedDict()
        self._matches: dict[object, _Match] = {}
        self._separator = 0

    def add(self, group: object, output: list[int]) -> None:
        if not output or group is None:
            return
        g = self._groups.get(group)
        if g is None:
            g = self._groups[group] = _Group()
            while len(self._groups) > self.max_groups:
                self._groups.popitem(last=False)
        self._groups.move_to_end(group)
        g.outputs.append(list(output))
        if len(g.auto.tokens) + len(output) + 1 > self.pool_tokens:
            self._rebuild(g)
        else:
            self._join(g.auto, output)
        g.version += 1

    def _rebuild(self, g: _Group) -> None:
        kept, total = [], 0
        for output in reversed(g.outputs):
            if total + len(output) + 1 > self.pool_tokens // 2 and kept:
                break
            kept.append(output[-self.pool_tokens // 2:])
            total += len(kept[-1]) + 1
        g.outputs = kept[::-1]
        g.auto = SuffixAutomaton()
        for output in g.outputs:
            self._join(g.auto, output)

    def _join(self, auto: SuffixAutomaton, output: list[int]) -> None:
        self._separator -= 1
        auto.extend(output)
        auto.extend([self._separator])

    def propose(self, key: object, group: object, stream: list[int], limit: int,
                min_match: int) -> tuple[list[int], int] | None:
        """(tokens[:limit] after the longest suffix of `stream` (the sequence's prompt + output)
        found in the group's outputs, its length), or None."""
        g = self._groups.get(group) if group is not None else None
        if g is None or limit <= 0:
            return None
        m = self._matches.get(key)
        if m is None or m.group != group or m.version != g.version:
            m = self._matches[key] = _Match(group, g.version, seen=max(0, len(stream) - self.REMATCH))
        auto = g.auto
        for token in stream[m.seen:]:
            m.state, m.matched = auto.walk(m.state, m.matched, token)
        m.seen = len(stream)
        if m.matched < min_match:
            return None
        start = auto.first[m.state] + 1
        tokens = []
        for token in auto.tokens[start:start + limit]:
            if token < 0:
                break
            tokens.append(token)
        return (tokens, m.matched) if tokens else None

    def forget(self, key: object) -> None:
        self._matches.pop(key, None)
