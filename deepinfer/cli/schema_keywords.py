"""Keywords of a JSON Schema that no JSON Schema vocabulary defines (so every validator ignores them).

`deepinfer compile` lists them next to the compiler's annotations: a typo such as
`"maxLenght"` or a vendor extension (`"x-order"`) constrains nothing, and the
user should see that. Pure data walking; knows nothing about the compiler.
"""

from __future__ import annotations

from typing import Any

_SUBSCHEMA = {"not", "items", "additionalItems", "additionalProperties", "contains", "if", "then", "else",
              "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
_SUBSCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems", "items"}
_SUBSCHEMA_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
_OTHER = {"$schema", "$id", "$ref", "$dynamicRef", "$recursiveRef", "$anchor", "$dynamicAnchor",
          "$recursiveAnchor", "$vocabulary", "$comment", "title", "description", "default", "examples",
          "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding", "format", "type", "enum",
          "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength",
          "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
          "maxProperties", "minProperties", "required", "dependentRequired", "dependencies"}
KNOWN = _SUBSCHEMA | _SUBSCHEMA_LISTS | _SUBSCHEMA_MAPS | _OTHER


def unknown_keywords(schema: Any, pointer: str = "") -> list[str]:
    """JSON pointers of the keywords no JSON Schema draft defines, in document order."""
    found: list[str] = []
    if not isinstance(schema, dict):
        return found
    for key, value in schema.items():
        here = f"{pointer}/{_escape(key)}"
        if key not in KNOWN:
            found.append(here)
        elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            for name, sub in value.items():
                found += unknown_keywords(sub, f"{here}/{_escape(name)}")
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            for i, sub in enumerate(value):
                found += unknown_keywords(sub, f"{here}/{i}")
        elif key in _SUBSCHEMA:
            found += unknown_keywords(value, here)
        elif key == "dependencies" and isinstance(value, dict):
            for name, sub in value.items():
                found += unknown_keywords(sub, f"{here}/{_escape(name)}")
    return found


def _escape(key: str) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")
