"""Normalizing one JSON Schema object into the canonical dict the lowering works on.

Owns the canonical form: `$ref`s followed and `allOf` members folded in (by
json_merge's exact `merge`), draft differences removed (draft-04 boolean
`exclusive*`, draft-07 array `items` + `additionalItems` vs `prefixItems`,
`dependencies` split into `dependentRequired`/`dependentSchemas`, a dependent schema of
more than `required` as the conditional it means (`_conds`: if the object has that member,
then the schema), `const` as a one-value `enum`, the keywords the declared draft lacks
dropped and, in drafts 4-7, the siblings of a `$ref` too: json_drafts.py), sub-schemas
wrapped as `Node`s so they keep their pointer and base URI, and the vocabulary of keywords
that validate (VALIDATION) or only annotate. Where each property and branch was declared is
recorded for json_order. Knows nothing about IR, and nothing about how two members combine.
"""

from __future__ import annotations

from typing import Any

from deepinfer.constraints import deadline as compile_deadline

from .merge import TYPES, MergeError, canon, merge
from .order import ANY_OF_POS, COND_POS, ONE_OF_POS, POS, shifted
from .drafts import UNDECLARED, Draft, draft_of
from .refs import Node, Refs
from .unevaluated import EVERYTHING, closing_items, closing_member, mark
from .values import check_value

ANNOTATIONS = {"title", "description", "default", "examples", "example", "$comment", "$schema", "$id",
               "id", "$anchor", "$dynamicAnchor", "definitions", "$defs", "deprecated", "readOnly",
               "writeOnly", "contentEncoding", "contentMediaType", "contentSchema", "$vocabulary"}
VALIDATION = {"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
              "exclusiveMinimum", "maxLength", "minLength", "pattern", "format", "items", "prefixItems",
              "additionalItems", "contains", "minContains", "maxContains", "maxItems", "minItems",
              "uniqueItems", "properties", "patternProperties", "additionalProperties", "propertyNames",
              "maxProperties", "minProperties", "required", "dependentRequired", "dependentSchemas",
              "dependencies", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$ref",
              "$dynamicRef", "$recursiveRef", "unevaluatedProperties", "unevaluatedItems"}
MAX_MERGE_DEPTH = 40


class Normalizer:
    def __init__(self, refs: Refs, draft: Draft = UNDECLARED):
        self.refs = refs
        self.draft = draft
        self.ignored = draft.ignored  # keywords the document's draft does not have

    def normalize(self, node: Node, depth: int = 0) -> dict | bool:
        """The canonical dict of a schema (True/False for boolean schemas)."""
        compile_deadline.check(node.ptr)  # merges can normalize a member many times over
        s = node.schema
        if isinstance(s, bool):
            return s
        if not isinstance(s, dict):
            raise MergeError(node.ptr, f"a schema must be an object or a boolean, not {type(s).__name__}")
        if depth > MAX_MERGE_DEPTH:
            raise MergeError(node.ptr, "$ref/allOf chain too deep (a schema that includes itself)")
        out: dict[str, Any] = {}
        members: list[tuple[Node, tuple]] = []  # (member, its position prefix: see json_order)
        if "$schema" in s and node.ptr and draft_of(s) != self.draft:
            # jsonschema validates a sub-schema with the draft its own $schema names
            raise MergeError(f"{node.ptr}/$schema", "a sub-schema declaring another draft than the "
                                                    "document's is not supported")
        keywords = s.items()
        if self.draft.ref_alone and "$ref" in s:  # drafts 4-7: jsonschema ignores $ref's siblings
            keywords = [(key, value) if key == "$ref" else (None, None) for key, value in keywords]
        for k, (key, value) in enumerate(keywords):
            if key not in VALIDATION or key in self.ignored:
                continue
            check_value(key, value, self.draft, node.ptr)  # a value of the wrong type: json_values
            if key == "$ref":
                members.append((self.refs.resolve(value, node.base), (k,)))
            elif key == "allOf":
                members.extend((node.child("allOf", i), (k, i)) for i in range(len(value)))
            elif key == "unevaluatedProperties":
                closer = closing_member(node, self.refs.resolve)
                if closer is None:  # what is evaluated depends on branches: markers they credit
                    out.update(mark(node, self.refs.resolve))
                elif closer != EVERYTHING:  # one more member (json_unevaluated); else no effect
                    members.append((closer, (k,)))
            elif key == "unevaluatedItems" and (closer := closing_items(node, self.refs.resolve, self.draft.name)):
                if closer != EVERYTHING:  # as unevaluatedProperties, where nothing branches
                    members.append((closer, (k,)))
            else:
                self._put(out, node, key, value)
                _record_position(out, key, k)
        self._finish(out, node)
        out["_sources"] = [node]
        result: dict | bool = out
        for member, prefix in members:
            other = shifted(self.normalize(member, depth + 1), prefix)
            result = merge(result, other, member)
            if result is False:
                return False
        return result

    def _put(self, out: dict, node: Node, key: str, value) -> None:
        ptr = f"{node.ptr}/{key}"
        if key in ("properties", "patternProperties", "dependentSchemas"):
            if not isinstance(value, dict):
                raise MergeError(ptr, f"{key} must be an object")
            if key == "dependentSchemas":
                for name in value:
                    self._dependent(out, node, key, name)
                return
            if key == "patternProperties" and list(value) == [""] and \
                    node.schema.get("additionalProperties", True) is not True:
                # jsonschema joins the patterns with "|" and reads an empty result as "no
                # pattern": every member is then also additional; other validators disagree
                raise MergeError(ptr, "the empty pattern as the only patternProperties next to "
                                      "additionalProperties is read differently by validators")
            out[key] = {name: node.child(key, name) for name in value}
        elif key in ("anyOf", "oneOf"):
            if not isinstance(value, list) or not value:
                raise MergeError(ptr, f"{key} must be a non-empty array")
            branches = [node.child(key, i) for i in range(len(value))]
            if key == "anyOf":
                out[key] = branches
            else:  # a list of oneOfs, so that allOf members with one each can be merged
                out["_oneOfs"] = [branches]
        elif key == "if":
            s = node.schema
            out.setdefault("_conds", []).append((node.child("if"), node.child("then") if "then" in s
                                                 else None, node.child("else") if "else" in s else None))
        elif key in ("then", "else"):
            pass  # without `if` they have no effect; with it they are taken above
        elif key == "items" and isinstance(value, list):  # draft-07 tuple form
            out["prefixItems"] = [node.child(key, i) for i in range(len(value))]
            out["_tuple"] = True
        elif key == "prefixItems":
            out[key] = [node.child(key, i) for i in range(len(value))]
        elif key in ("items", "additionalItems", "additionalProperties", "contains", "propertyNames",
                     "not"):
            out[key] = node.child(key)
        elif key == "dependencies":
            for name, dep in value.items():
                if isinstance(dep, list):
                    out.setdefault("dependentRequired", {})[name] = list(dep)
                else:
                    self._dependent(out, node, key, name)
        elif key in ("const", "enum"):
            values = [value] if key == "const" else list(value) if isinstance(value, list) else None
            if values is None:
                raise MergeError(ptr, "enum must be an array")
            if "enum" in out:
                keep = {canon(v) for v in out["enum"]}
                values = [v for v in values if canon(v) in keep]
            out["enum"] = values
        elif key == "type":
            names = [value] if isinstance(value, str) else list(value)
            bad = [t for t in names if t not in TYPES]
            if bad:
                raise MergeError(ptr, f"unknown type {bad[0]!r}")
            out["type"] = _types(names)
        else:
            out[key] = value

    def _dependent(self, out: dict, node: Node, key: str, name: str) -> None:
        """A dependent schema: one of only `required` stays in `dependentSchemas` (json_objects'
        presence machine enforces it); any other is the conditional it means, `if` the
        instance is an object with member `name` `then` the schema (json_composition)."""
        dep = node.child(key, name)
        if _required_only(dep.schema):
            out.setdefault("dependentSchemas", {})[name] = dep
            return
        present = Node({"type": "object", "required": [name]}, dep.ptr, dep.base, dep.ref_alone)
        out.setdefault("_conds", []).append((present, dep, None))  # no position: placed as is

    def _finish(self, out: dict, node: Node) -> None:
        """Draft differences: boolean exclusive*, items/additionalItems."""
        for excl, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if excl in out and (isinstance(out[excl], bool) or self.draft.boolean_exclusive):
                # draft-04 reads any value as a flag, as jsonschema's Draft4Validator does
                flag = out.pop(excl)
                if flag and bound in out:
                    out[excl] = out.pop(bound)
        if out.pop("_tuple", False):
            rest = out.pop("additionalItems", None)
            out.pop("items", None)
            if rest is not None:
                out["items"] = rest
        else:
            out.pop("additionalItems", None)  # without tuple items it has no effect


def _record_position(out: dict, key: str, k: int) -> None:
    """Where this schema object declares its properties and branches (key index k)."""
    if key == "properties" and "properties" in out:
        out[POS] = {name: (k, j) for j, name in enumerate(out["properties"])}
    elif key == "oneOf":
        out[ONE_OF_POS] = [(out["_oneOfs"][0], (k,))]
    elif key == "anyOf":
        out[ANY_OF_POS] = (k,)
    elif key == "if":
        out.setdefault(COND_POS, []).append((out["_conds"][-1], (k,)))


def _required_only(schema) -> bool:
    """true, false, or a schema object whose only validating keyword is `required`."""
    if isinstance(schema, bool):
        return True
    return isinstance(schema, dict) and all(k == "required" or k not in VALIDATION for k in schema)


def _types(names) -> frozenset:
    return frozenset(names)
