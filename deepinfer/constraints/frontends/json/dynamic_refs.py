"""`$dynamicRef` (2020-12) and `$recursiveRef` (2019-09) where they are static.

Both resolve like `$ref` first; then, if the target carries a `$dynamicAnchor` of that name (or
`$recursiveAnchor: true`), the outermost schema resource in the *dynamic scope* (the resources
entered on the way to this point of validation) with such an anchor wins. A document with one
schema resource (no `$id` below its root) has one resource in every dynamic scope, so the
outermost is the document itself, whose anchor of that name is the very target: each such
reference is a plain `$ref` (`$recursiveRef: "#"` is `$ref: "#"`). `static_refs` rewrites them
so in a copy of the document; with nested resources, a reference that is not a fragment, or a
`$ref` next to it, the keyword stays and the lowering refuses it (fail closed). Knows nothing
about lowering.
"""

from __future__ import annotations

from typing import Any

_DYNAMIC = ("$dynamicRef", "$recursiveRef")
_VALUES = frozenset({"enum", "const", "default", "examples", "example"})  # JSON values, not schemas


def static_refs(root: Any) -> Any:
    """`root`, or a copy with its static `$dynamicRef` / `$recursiveRef` written as `$ref`."""
    if not _mentions(root) or _nested_resources(root):
        return root
    return _rewrite(root)


def _mentions(doc) -> bool:
    stack = [doc]
    while stack:
        s = stack.pop()
        if isinstance(s, dict):
            if any(k in s for k in _DYNAMIC):
                return True
            stack.extend(v for k, v in s.items() if k not in _VALUES)
        elif isinstance(s, list):
            stack.extend(s)
    return False


def _nested_resources(root) -> bool:
    """Whether a schema below the root declares its own `$id` (a new schema resource)."""
    stack = [v for k, v in root.items() if k not in _VALUES] if isinstance(root, dict) else []
    while stack:
        s = stack.pop()
        if isinstance(s, dict):
            ident = s.get("$id")
            if isinstance(ident, str) and not ident.startswith("#"):
                return True
            stack.extend(v for k, v in s.items() if k not in _VALUES)
        elif isinstance(s, list):
            stack.extend(s)
    return False


def _rewrite(s):
    if isinstance(s, list):
        return [_rewrite(v) for v in s]
    if not isinstance(s, dict):
        return s
    out = {k: (v if k in _VALUES else _rewrite(v)) for k, v in s.items()}
    if "$ref" in s:
        return out
    dynamic = s.get("$dynamicRef")
    if isinstance(dynamic, str) and dynamic.startswith("#") and "$recursiveRef" not in s:
        return {("$ref" if k == "$dynamicRef" else k): v for k, v in out.items()}
    if s.get("$recursiveRef") == "#" and "$dynamicRef" not in s:
        return {("$ref" if k == "$recursiveRef" else k): v for k, v in out.items()}
    return out
