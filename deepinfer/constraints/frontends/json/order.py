"""Declaration order of object members across allOf, $ref, oneOf, anyOf and if members.

The object lowering emits members in the order of the normalized `properties`
dict. Normalizing folds allOf/$ref members together and keeps oneOf/anyOf/if
apart until json_composition merges a branch in, so the dict order alone
would put every plain property before a branch's. This module keeps, next to
a normalized schema, the *position* of each property: a tuple of ints (key
index in its schema object, then allOf/branch index, and so on down to the
declaration), compared as tuples, i.e. in schema text order as seen from the
schema being normalized ($ref members count where the `$ref` is written).
Owns only this bookkeeping; it never changes which instances are accepted,
only the order of members. Knows nothing about IR or validation.
"""

from __future__ import annotations

POS = "_pos"              # {property name: position}
ONE_OF_POS = "_oneOf_pos"  # [(branches list of one `_oneOfs` entry, position prefix)]
COND_POS = "_cond_pos"     # [(`_conds` entry, position prefix)]
ANY_OF_POS = "_anyOf_pos"  # position prefix of the `anyOf` branches
ANCHORED = "_anchored"     # positions already relative to the schema it is merged into
BRANCH_KEYS = (ONE_OF_POS, COND_POS, ANY_OF_POS)
ORDER_KEYS = frozenset({POS, *BRANCH_KEYS, ANCHORED})
NOT_PATTERN_AT = "_not_pattern_at"  # {negated pattern: the pointer of the `pattern` it came from}
META = ORDER_KEYS | {"_sources", NOT_PATTERN_AT}  # keys that are no keyword of the schema


def shifted(d, prefix: tuple):
    """`d` with its positions put under `prefix` and marked anchored (a copy; d is shared)."""
    if not isinstance(d, dict):
        return d
    out = dict(d)
    out[POS] = {name: prefix + p for name, p in d.get(POS, {}).items()}
    for key in (ONE_OF_POS, COND_POS):
        if key in d:
            out[key] = [(entry, prefix + p) for entry, p in d[key]]
    if ANY_OF_POS in d:
        out[ANY_OF_POS] = prefix + d[ANY_OF_POS]
    out[ANCHORED] = True
    return out


def _end(d: dict) -> tuple:
    """A position after every position of d (an unanchored merge puts its member there)."""
    firsts = [p[0] for p in d.get(POS, {}).values() if p]
    firsts += [p[0] for key in (ONE_OF_POS, COND_POS) for _, p in d.get(key, []) if p]
    if d.get(ANY_OF_POS):
        firsts.append(d[ANY_OF_POS][0])
    return (max(firsts, default=-1) + 1,)


def merge_positions(out: dict, a: dict, b: dict) -> None:
    """The position data of merge(a, b) into `out`: a name declared twice keeps its first place."""
    if not b.get(ANCHORED):  # merged without a known place (e.g. a negation's parts): after a
        b = shifted(b, _end(a))
    pos = dict(a.get(POS, {}))
    for name, p in b.get(POS, {}).items():
        pos[name] = min(pos[name], p) if name in pos else p
    out[POS] = pos
    for key in (ONE_OF_POS, COND_POS):
        pairs = list(a.get(key, [])) + list(b.get(key, []))
        if pairs:
            out[key] = pairs
    prefixes = [d[ANY_OF_POS] for d in (a, b) if ANY_OF_POS in d]
    if prefixes:
        out[ANY_OF_POS] = min(prefixes)
    out.pop(ANCHORED, None)


def branch_prefix(d: dict, key: str, entry) -> tuple | None:
    """The position prefix of a `_oneOfs`/`_conds` entry of d (None: not known)."""
    return next((p for e, p in d.get(key, []) if e is entry), None)


def place(d, prefix: tuple | None, index: int):
    """A branch's normalized schema placed at branch `index` under `prefix` (as is if unknown)."""
    return d if prefix is None else shifted(d, prefix + (index,))


def follow(pos: dict, names: list[str]) -> dict:
    """pos with the places of `names` dealt out again in the order of `names` (an order that
    won over positions, see json_merge._merge_objects, stays the order in later merges)."""
    if not all(n in pos for n in names):
        return pos
    out = dict(pos)
    out.update(zip(names, sorted(pos[n] for n in names)))
    return out


def ordered(names: list[str], pos: dict) -> list[str]:
    """names in declaration order when every one has a position, else as given."""
    if all(n in pos for n in names):
        return sorted(names, key=pos.__getitem__)  # stable: ties keep their order
    return names
