"""A verdict on a string value against a simple sub-schema, without jsonschema.

Owns `quick_valid(value, schema) -> bool | None`: True/False when the schema uses
only keywords whose meaning for a string is immediate (`type`, `enum`, `const`,
`minLength`, `maxLength` and annotations), None otherwise (the caller asks
jsonschema). Why: the lowering filters every enum value through its source
schemas (`Lowerer.valid`), and one jsonschema `evolve` + `is_valid` per value was
~9% of a median MaskBench compile; almost all of those are string enums under
`{"type": "string", "enum": [...], "description": ...}`. Knows nothing else.
"""

from __future__ import annotations

# keywords that never affect validity
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment",
                          "deprecated", "readOnly", "writeOnly"})
_TYPES = frozenset({"string", "number", "integer", "boolean", "null", "object", "array"})


def quick_valid(value, schema) -> bool | None:
    if not isinstance(value, str) or not isinstance(schema, dict):
        return None
    verdict = True
    for key, x in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key == "type":
            types = [x] if isinstance(x, str) else x
            if not isinstance(types, list) or not all(t in _TYPES for t in types):
                return None  # an unknown type name: jsonschema's error is the one to report
            verdict = verdict and "string" in types
        elif key == "enum":
            if not isinstance(x, list):
                return None
            verdict = verdict and any(isinstance(e, str) and e == value for e in x)
        elif key == "const":
            verdict = verdict and isinstance(x, str) and x == value
        elif key in ("minLength", "maxLength"):
            if not isinstance(x, int) or isinstance(x, bool):
                return None  # jsonschema decides what a float bound means
            verdict = verdict and (len(value) >= x if key == "minLength" else len(value) <= x)
        else:
            return None
    return verdict
