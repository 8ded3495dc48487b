"""The verdict of a JSON Schema on concrete JSON values.

Owns `Verdict.valid` (is this value valid against this, possibly synthetic,
Node: `jsonschema`'s answer, with json_quick_valid's shortcut and the
synthetic `allOf`/`not` nodes of merges and negations taken apart first) and
`markers_allow` (the constraints composition adds to a normalized dict as
markers rather than as schema sources). Used to filter `enum`/`const` values
and declared names. Knows nothing about IR or the lowering's rules.
"""

from __future__ import annotations

import re
from typing import Any

from .jsonschema_import import load as load_jsonschema
from .merge import canon
from .quick_valid import quick_valid
from .refs import Node, Refs


class Verdict:
    def __init__(self, refs: Refs, fail):
        self.refs = refs
        self.fail = fail  # (ptr, message) -> the ConstraintError to raise
        self._validators: dict[str, Any] = {}
        self._resolvers: dict[str, Any] = {}  # base URI -> its resource's resolver (None: unknown)

    def valid(self, value, node: Node, listed: bool = False) -> bool:
        """`jsonschema`'s verdict for `value` against a (possibly synthetic) Node. listed: the
        value is known to satisfy the node's own `enum`/`const` (it comes from their merged
        list), which are then not checked again (an enum of n values was n^2 comparisons)."""
        s = node.schema
        if isinstance(s, dict) and any(isinstance(m, Node) for m in s.get("allOf", [])):
            return all(self.valid(value, m, listed) for m in s["allOf"])
        if isinstance(s, dict) and isinstance(s.get("not"), Node):
            return not self.valid(value, s["not"])
        if listed and isinstance(s, dict) and ("enum" in s or "const" in s):
            s = {k: v for k, v in s.items() if k not in ("enum", "const")}
        quick = quick_valid(value, s)  # string enums under plain string schemas: no jsonschema call
        if quick is not None:
            return quick
        validator = self._validator()
        try:
            return self._at_base(validator, s, node.base).is_valid(value)
        except Exception as exc:  # noqa: BLE001 - a schema jsonschema cannot evaluate
            raise self.fail(node.ptr, f"cannot evaluate enum/const against this schema: {exc}") from None

    def _at_base(self, validator, s, base: str):
        """A validator for sub-schema `s` whose refs resolve against `base` (its resource).
        Why not `{"$id": base, **s}`: draft-04 names it `id`, and a meta-schema's own
        `#/definitions/...` must resolve inside the meta-schema (Swagger 2.0 refers to
        draft-04's `properties/type`), not inside the document."""
        if base == self.refs.root.base:
            return validator.evolve(schema=s)
        if base not in self._resolvers:  # one lookup per resource, not per enum value
            try:
                self._resolvers[base] = validator._resolver.lookup(base).resolver
            except Exception:  # noqa: BLE001 - not a resource the registry knows: name it in place
                self._resolvers[base] = None
        resolver = self._resolvers[base]
        if resolver is None:
            return validator.evolve(schema={"$id": base, **s}) if isinstance(s, dict) else validator.evolve(schema=s)
        return validator.evolve(schema=s, _resolver=resolver)

    def _validator(self):
        v = self._validators.get("root")
        if v is None:
            jsonschema = load_jsonschema()  # imported here, on the first verdict (seconds, once)
            root = self.refs.root.schema
            cls = jsonschema.validators.validator_for(root, default=jsonschema.Draft202012Validator)
            v = self._validators["root"] = cls(root, format_checker=cls.FORMAT_CHECKER)
        return v


def markers_allow(d: dict, v) -> bool:
    """Constraints that composition adds as markers rather than as schema sources."""
    if isinstance(v, str):
        if any(re.search(p, v) is None for p in d.get("_patterns", [])):
            return False
        if any(re.search(p, v) is not None for p in d.get("_not_patterns", [])):
            return False
    if isinstance(v, (int, float)) and not isinstance(v, bool) and d.get("_not_integer"):
        if float(v).is_integer():
            return False
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if any(float(v).is_integer() and int(v) % m == 0 for m in d.get("_not_multiple_of", [])
               if isinstance(m, int) and m > 0):
            return False
    if canon(v) in {canon(x) for x in d.get("_not_enum", [])}:
        return False
    if isinstance(v, dict) and any(all(n in v for n in group) for group in d.get("_forbid", [])):
        return False
    return True
