"""A regular language over characters intersected with a length range, on the IR.

Owns `bound_length(expr, lo, hi)`: the strings of L(expr) whose length in
characters lies in [lo, hi] (JSON Schema `minLength`/`maxLength` together with
`pattern` or `format`). A sequence with several variable-length parts is the
union over "boxes": per part a floor and a cap on its length, with the floors
summing to the missing length and the caps to the spare length. That union is
exactly the length-bounded language when every composition is enumerated
(up to MAX_BOXES); past that, a few boxes inside the bounds are kept (even
split with the remainder to the first parts, and each part taking all the
slack), which only ever drops strings (sound) and is reported as not exact.
Knows only the IR.
"""

from __future__ import annotations

from typing import Iterator

from deepinfer.constraints import ir
from deepinfer.constraints.ir import CharClass, Expr, alt, repeat, seq

MAX_BOXES = 512
MAX_COST = 4096  # characters of bounded parts over all boxes (automaton size)
SMALL_COUNT = 6  # repetitions of variable-length items unrolled per count


class LengthError(ValueError):
    """An expression that cannot be measured (a rule reference)."""


def min_len(e: Expr) -> int:
    match e:
        case ir.Literal(text):
            return len(text)
        case CharClass():
            return 1
        case ir.Seq(items):
            return sum(min_len(i) for i in items)
        case ir.Alt(items):
            return min((min_len(i) for i in items), default=0)
        case ir.Repeat(item, lo, _):
            return lo * min_len(item)
    raise LengthError(f"cannot measure {e!r}")


def max_len(e: Expr) -> int | None:
    match e:
        case ir.Literal(text):
            return len(text)
        case CharClass():
            return 1
        case ir.Seq(items):
            total = 0
            for i in items:
                m = max_len(i)
                if m is None:
                    return None
                total += m
            return total
        case ir.Alt(items):
            ms = [max_len(i) for i in items]
            return None if None in ms else max(ms, default=0)
        case ir.Repeat(item, _, hi):
            m = max_len(item)
            if m == 0:
                return 0
            return None if hi is None or m is None else hi * m
    raise LengthError(f"cannot measure {e!r}")


def bound_length(e: Expr, lo: int, hi: int | None) -> tuple[Expr, bool]:
    """(expr, exact): a subset of L(e) with lengths in [lo, hi]; exact=False if some strings
    of L(e) within the bounds were dropped (too many ways to share the length budget)."""
    mn, mx = min_len(e), max_len(e)
    if lo <= mn and (hi is None or (mx is not None and mx <= hi)):
        return e, True
    if (hi is not None and (hi < mn or hi < lo)) or (mx is not None and mx < lo):
        return ir.NOTHING, True
    match e:
        case ir.Alt(items):
            parts = [bound_length(i, lo, hi) for i in items]
            return alt(*(p for p, _ in parts)), all(x for _, x in parts)
        case ir.Repeat(item, a, b):
            return _bound_repeat(item, a, b, lo, hi)
        case ir.Seq(items):
            return _bound_seq(list(items), lo, hi)
    return ir.NOTHING, True  # fixed-length leaves outside the bounds


def _bound_repeat(item: Expr, a: int, b: int | None, lo: int, hi: int | None) -> tuple[Expr, bool]:
    mn, mx = min_len(item), max_len(item)
    if mn == mx and mn > 0:  # fixed-length items: the count bounds are exact
        cnt_lo = max(a, -(-lo // mn))
        cnt_hi = hi // mn if hi is not None else None
        if b is not None:
            cnt_hi = b if cnt_hi is None else min(b, cnt_hi)
        return repeat(item, cnt_lo, cnt_hi), True
    # empty items change nothing: count only the non-empty ones (then any count <= b works)
    inner, exact = bound_length(item, 1, hi) if mn == 0 else (item, True)
    a = a if mn > 0 else 0
    if inner == ir.NOTHING:
        return (ir.EMPTY if lo == 0 else ir.NOTHING), exact
    i_mn = min_len(inner)
    n_max = b if hi is None else (hi // i_mn if b is None else min(b, hi // i_mn))
    if n_max is not None and n_max < a:
        return ir.NOTHING, True
    if n_max is not None and n_max <= SMALL_COUNT:  # unroll each count: exact
        parts = []
        for n in range(a, n_max + 1):
            body, ok = (ir.EMPTY, True) if n == 0 else bound_length(seq(*[inner] * n), lo, hi)
            if n == 0 and lo > 0:
                continue
            exact = exact and ok
            parts.append(body)
        return (alt(*parts) if parts else ir.NOTHING), exact
    need_items = max(a, -(-lo // i_mn))  # this many items of length >= i_mn reach lo
    if hi is None:  # many items, or one item long enough by itself (both sound)
        first, _ = bound_length(inner, lo, None)
        parts = [repeat(inner, need_items, b)]
        if first != ir.NOTHING:
            parts.append(seq(first, repeat(inner, max(a - 1, 0), None if b is None else b - 1)))
        return alt(*parts), False
    # k items of at most hi // k characters each, for k = n_max, n_max/2, ..., 1 (sound)
    parts = [ir.EMPTY] if lo == 0 and a == 0 else []
    counts, k = [], n_max
    while k >= 1:
        counts.append(k)
        k //= 2
    if hi > 64:  # long strings: the two extremes only (automaton size grows with each)
        counts = [n_max, 1] if n_max > 1 else [1]
    for k in counts:
        if max(need_items, 1) <= k:
            each, _ = bound_length(inner, i_mn, hi // k)
            if each != ir.NOTHING:
                parts.append(repeat(each, max(need_items, 1), k))
    return (alt(*parts) if parts else ir.NOTHING), False


def _compositions(total: int, rooms: list[int | None], limit: int) -> list[tuple[int, ...]] | None:
    """Ordered ways to write `total` as sum of parts 0 <= x_k <= rooms[k]; None if over `limit`."""
    out: list[tuple[int, ...]] = []
    suffix_room: list[int | None] = [0] * (len(rooms) + 1)
    for k in range(len(rooms) - 1, -1, -1):
        r, s = rooms[k], suffix_room[k + 1]
        suffix_room[k] = None if r is None or s is None else r + s

    def walk(k: int, left: int, acc: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        if k == len(rooms):
            if left == 0:
                yield acc
            return
        rest = suffix_room[k + 1]
        top = left if rooms[k] is None else min(left, rooms[k])
        bottom = 0 if rest is None else max(0, left - rest)
        for x in range(bottom, top + 1):
            yield from walk(k + 1, left - x, acc + (x,))

    for c in walk(0, total, ()):
        out.append(c)
        if len(out) > limit:
            return None
    return out


def _fallback(total: int, rooms: list[int | None]) -> list[tuple[int, ...]]:
    """A few sound compositions of `total`: even split (remainder to the first parts), then
    each part taking as much as it can (the others as evenly as possible)."""
    def even(amount: int, order: list[int]) -> list[int]:
        out = [0] * len(rooms)
        left = amount
        while left > 0:
            open_ = [k for k in order if rooms[k] is None or out[k] < rooms[k]]
            if not open_:
                break
            share = max(left // len(open_), 1)
            for k in open_:
                give = min(share, left, (rooms[k] - out[k]) if rooms[k] is not None else left)
                out[k] += give
                left -= give
                if left == 0:
                    break
        return out

    order = list(range(len(rooms)))
    found = [tuple(even(total, order))]
    for k in order:
        found.append(tuple(even(total, [k] + [j for j in order if j != k])))
    # an even split that did not place everything is not a composition of `total`
    return [c for c in dict.fromkeys(found) if sum(c) == total]


def _bound_seq(items: list[Expr], lo: int, hi: int | None) -> tuple[Expr, bool]:
    mins = [min_len(i) for i in items]
    maxs = [max_len(i) for i in items]
    variable = [k for k in range(len(items)) if maxs[k] != mins[k]]
    base = sum(mins)
    if len(variable) == 1:
        k = variable[0]
        part, exact = bound_length(items[k], max(lo - base + mins[k], 0),
                                   None if hi is None else hi - base + mins[k])
        return seq(*items[:k], part, *items[k + 1:]), exact
    rooms = [None if maxs[k] is None else maxs[k] - mins[k] for k in variable]
    total_room = None if None in rooms else sum(rooms)
    need = max(lo - base, 0)
    slack = None if hi is None else hi - base
    if total_room is not None:
        slack = total_room if slack is None else min(slack, total_room)
    if (slack is not None and slack < need) or (total_room is not None and need > total_room):
        return ir.NOTHING, True
    floors = _compositions(need, rooms, MAX_BOXES)
    caps = [None] if slack is None else _compositions(slack, rooms, MAX_BOXES)
    exact = floors is not None and caps is not None and len(floors) * len(caps) <= MAX_BOXES
    if exact and slack is not None:
        cost = len(floors) * len(caps) * (sum(mins[k] for k in variable) + slack)
        exact = cost <= MAX_COST
    if exact:
        boxes = [(f, c) for f in floors for c in caps if c is None or all(x <= y for x, y in zip(f, c))]
    elif slack is None:
        boxes = [(f, None) for f in _fallback(need, rooms)]
    else:  # a few cap choices, each with floors inside it (sound)
        caps = _fallback(slack, rooms)
        if len(variable) * slack > 256:
            caps = caps[:1]  # long strings: the even split only (automaton size)
        boxes = [(tuple(_fallback(need, list(c))[0]), c) for c in caps]
    alts = []
    for f, c in boxes:
        out = list(items)
        for n, k in enumerate(variable):
            part_hi = None if c is None else mins[k] + c[n]
            out[k], ok = bound_length(items[k], mins[k] + f[n], part_hi)
            exact = exact and ok
        alts.append(seq(*out))
    return (alt(*alts) if alts else ir.NOTHING), exact
