"""A JSON Schema's skeleton text: the structure drafts can copy before any output has shown it.

Requests that share a schema repeat each other's structure (`",\n  "age": `), and the text pool
(text_drafts.py) lets a sequence draft it from outputs that got there first. Requests submitted
together run in lockstep, though: the first time through each field nobody is ahead, and each
piece of structure (a newline, `"key":`, ` "`) costs a step. A skeleton instance of the schema,
printed the way `json.dumps(indent=2)` does (properties in declaration order, placeholder values:
`""`, `0`, `false`, two array items), is retired into the text pool as if an earlier output had
written it, so `"city":` continues with ` "` and `",` with `\n  "`. Only a draft source: a wrong
guess is a rejected draft token, never an output change.

Knows JSON Schema's structural keywords only (type, properties, items, prefixItems, enum, const,
anyOf/oneOf/allOf first branches, local $ref); anything else gets a null placeholder. Knows
nothing about models, masks or sampling.
"""

from __future__ import annotations

import json

MAX_DEPTH = 6        # nesting (and $ref recursion) followed before a placeholder ends the branch
MAX_CHARS = 4096     # a bigger skeleton is not worth its pool tokens


def skeleton_text(schema: object) -> str | None:
    """The skeleton instance of `schema` as indented JSON text, or None if it is not an object or
    array schema (scalars have no structure worth drafting) or it is too big."""
    value = _instance(schema, schema, 0)
    if not isinstance(value, (dict, list)):
        return None
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return text if len(text) <= MAX_CHARS else None


def _instance(schema: object, root: object, depth: int) -> object:
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return None
    if "$ref" in schema:
        return _instance(_resolve(schema["$ref"], root), root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _instance(schema[key][0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind == "object" or (kind is None and isinstance(schema.get("properties"), dict)):
        props = schema.get("properties")
        if not isinstance(props, dict):
            return {}
        return {name: _instance(sub, root, depth + 1) for name, sub in props.items()}
    if kind == "array" or (kind is None and ("items" in schema or "prefixItems" in schema)):
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list) and prefix:
            return [_instance(sub, root, depth + 1) for sub in prefix]
        items = schema.get("items")
        if isinstance(items, list):  # draft-07 tuple form
            return [_instance(sub, root, depth + 1) for sub in items]
        if not isinstance(items, dict):
            return []
        # Two items where allowed: the separator between items (`",\n    "`) is structure too.
        count = 1 if isinstance(schema.get("maxItems"), int) and schema["maxItems"] < 2 else 2
        return [_instance(items, root, depth + 1)] * count
    return {"string": "", "integer": 0, "number": 0, "boolean": False}.get(kind)


def _resolve(ref: object, root: object) -> object:
    """A local JSON-pointer $ref ("#/$defs/x"); anything else resolves to nothing."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    node = root
    for part in filter(None, ref[1:].split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node
