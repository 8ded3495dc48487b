"""Which strings of an instance the matcher caps: the long-`maxLength` policy.

A `maxLength` above MATCHER_MAX_LENGTH costs the grammar a state per character (thousands:
slow to build, and past ~10,000 over the DFA limit); where it is safe the lowering leaves
such a string unbounded and `constraints.length_caps.LengthCapAutomaton` counts its
characters instead. The contexts are json_unique's (every sub-schema that may apply at a
place, all branches taken), so a cap applies at least wherever its `maxLength` does:
sound. It must also never strand generation: a cap over-applied to a string that some
other sub-schema at that place requires to be long, or to follow a pattern, could leave
no way to close it. So a `maxLength` node is *capped* only when every context it can be
in, and every context enclosing those, holds nothing that constrains strings beyond plain
length (no pattern, format, `not`, `if`, `oneOf`, long minLength or long enum/const strings:
a `not` or a const of an enclosing value constrains the strings inside it too); every string the grammar can write there
may close after any prefix, and the cap is never below a minimum. `capped_nodes` finds
those nodes by walking every context reachable from the root (undeclared member names
take every patternProperties and additionalProperties at once: a superset, so a
checked context covers every narrower one met at generation time). Knows nothing about
tokens or IR.
"""

from __future__ import annotations

from .unique import UniquePolicy

MATCHER_MAX_LENGTH = 128  # longer maxLength: counted by the matcher where capped_nodes allows
CAP_NOTE = "maxLength enforced by the matcher (characters counted) at"
# keywords that shape a string's text, or whose lowering negates a sub-schema (`not`, `if`'s
# else branch, oneOf's other branches): a negated maxLength is a minimum the cap would undercut
_RISKY = ("pattern", "format", "not", "if", "oneOf")
MAX_CONTEXTS = 5_000  # contexts walked before giving up on caps (MaskBench's most: a few hundred)
_UNDECLARED = object()  # stands for every member name no `properties` declares


def has_long_max_length(schema) -> bool:
    """Whether any sub-schema (anywhere in the document) has maxLength > MATCHER_MAX_LENGTH."""
    stack = [schema]
    while stack:
        s = stack.pop()
        if isinstance(s, dict):
            if _long_max_length(s):
                return True
            stack.extend(s.values())
        elif isinstance(s, list):
            stack.extend(s)
    return False


class CapPolicy(UniquePolicy):
    """Contexts as json_unique's; `cap(ctx)`: the smallest capped maxLength among them."""

    def __init__(self, root, capped: set) -> None:
        super().__init__(root)
        self.capped = capped  # (ptr, base) of the capped maxLength nodes
        self.smallest_cap = MATCHER_MAX_LENGTH + 1

    def key(self, ctx: frozenset, name) -> frozenset:
        """Every patternProperties taken whatever the name: the contexts capped_nodes checked
        (and no regex dialect question: which patterns a name matches is not asked)."""
        return self.member(ctx, name, every_pattern=True)

    def cap(self, ctx: frozenset) -> int | None:
        got = self._memo.get(("c", ctx))
        if got is None:
            caps = [int(n.schema["maxLength"]) for n in (self.nodes[i] for i in ctx)
                    if (n.ptr, n.base) in self.capped]
            got = self._memo[("c", ctx)] = min(caps) if caps else -1
        return None if got < 0 else got


def capped_nodes(root) -> set:
    """(ptr, base) of every node whose long maxLength the matcher may enforce (see above)."""
    policy = UniquePolicy(root)
    start = (policy.root(), False)
    seen, todo = {start}, [start]
    long_nodes: dict[tuple, bool] = {}  # node -> capped so far (False once in an impure context)
    while todo:
        if len(seen) > MAX_CONTEXTS:  # sets of sub-schemas can multiply: then no caps at all
            return set()
        ctx, tainted = todo.pop()
        nodes = [policy.nodes[i] for i in ctx]
        # impure here or above: a `not`/`if`/`oneOf` or a long const/enum of an enclosing value
        # constrains the strings inside it too (`not: {properties: {a: {maxLength: 200}}}` makes
        # `a` longer than 200; `const: [1, "x" * 300]` needs a 300-character item)
        tainted = tainted or any(_risky(n.schema) for n in nodes)
        for n in nodes:
            if _long_max_length(n.schema):
                key = (n.ptr, n.base)
                long_nodes[key] = long_nodes.get(key, True) and not tainted
        for nxt in _children(policy, ctx, nodes):
            if (nxt, tainted) not in seen:
                seen.add((nxt, tainted))
                todo.append((nxt, tainted))
    return {key for key, ok in long_nodes.items() if ok}


def _children(policy: UniquePolicy, ctx: frozenset, nodes) -> list:
    names = {name for n in nodes if isinstance(n.schema.get("properties"), dict) for name in n.schema["properties"]}
    out = [policy.item(ctx)]
    for name in names:
        out.append(policy.member(ctx, name, every_pattern=True))
    out.append(policy.member(ctx, _UNDECLARED, every_pattern=True))
    return out


def _long_max_length(s) -> bool:
    m = s.get("maxLength") if isinstance(s, dict) else None
    return isinstance(m, (int, float)) and not isinstance(m, bool) and m > MATCHER_MAX_LENGTH


def _risky(s) -> bool:
    """Constrains a string beyond a length that can stop anywhere (see the module docstring)."""
    if not isinstance(s, dict):
        return False
    if any(k in s for k in _RISKY):
        return True
    lo = s.get("minLength")
    if isinstance(lo, (int, float)) and not isinstance(lo, bool) and lo > MATCHER_MAX_LENGTH:
        return True
    values = list(s["enum"]) if isinstance(s.get("enum"), list) else []
    if "const" in s:
        values.append(s["const"])
    return any(_long_text(v) for v in values)


def _long_text(value) -> bool:
    if isinstance(value, str):
        return len(value) > MATCHER_MAX_LENGTH
    if isinstance(value, dict):
        return any(_long_text(v) for v in value.values())
    if isinstance(value, list):
        return any(_long_text(v) for v in value)
    return False
