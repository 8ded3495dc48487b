"""Random JSON Schemas over the keywords the compiler handles, and near-valid instances for them.

The generator of test_json_schema_fuzz.py's soundness fuzz: schemas nest objects, arrays and
composition (anyOf, oneOf, allOf, not, if/then/else, $ref) over scalar leaves with bounds,
patterns, formats, enums and consts; instances are drawn from a schema's shape (often valid),
then mutated (often invalid). Deterministic for a seed.
"""

from __future__ import annotations

import copy
import random

NAMES = ["a", "b", "c", "id", "x-y"]
SCALARS = [None, True, False, 0, 1, -1, 2, 3.5, "", "a", "ab", "abc", "2020-01-01"]
STRINGS = ["", "a", "ab", "abc", "ba", "xb", "2020-01-01", "a@b.co", "1.2.3.4", "c"]


class SchemaFuzz:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    # ------------------------------------------------------------------ values
    def value(self, depth: int = 0):
        x = self.r.random()
        if depth > 2 or x < 0.5:
            return self.r.choice(SCALARS)
        if x < 0.75:
            return [self.value(depth + 1) for _ in range(self.r.randrange(3))]
        return {n: self.value(depth + 1) for n in self.r.sample(NAMES, self.r.randrange(3))}

    # ----------------------------------------------------------------- schemas
    def leaf(self) -> dict:
        kind = self.r.choice(["integer", "number", "string", "boolean", "null", "enum", "const", "any"])
        if kind == "integer":
            s = {"type": "integer"}
            for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
                if self.chance(0.3):
                    s[key] = self.r.randrange(1, 4) if key == "multipleOf" else self.r.randrange(-3, 6)
            return s
        if kind == "number":
            s = {"type": "number"}
            for key in ("minimum", "maximum"):
                if self.chance(0.4):
                    s[key] = self.r.choice([-1, 0, 0.5, 2, 3.5])
            return s
        if kind == "string":
            s = {"type": "string"}
            if self.chance(0.3):
                s["minLength"] = self.r.randrange(3)
            if self.chance(0.3):
                s["maxLength"] = self.r.randrange(1, 4)
            if self.chance(0.2):
                s["pattern"] = self.r.choice(["^a", "b$", "^[ab]*$", "c"])
            if self.chance(0.1):
                s["format"] = self.r.choice(["date", "email", "uuid", "ipv4"])
            return s
        if kind in ("boolean", "null"):
            return {"type": kind}
        if kind == "enum":
            return {"enum": [self.value(1) for _ in range(self.r.randrange(1, 4))]}
        return {"const": self.value(1)} if kind == "const" else {}

    def schema(self, depth: int = 0) -> dict:
        if depth > 2 or self.chance(0.35):
            return self.leaf()
        kind = self.r.choice(["object", "object", "array", "array", "anyOf", "oneOf", "allOf", "not", "if", "types"])
        if kind == "object":
            return self._object(depth)
        if kind == "array":
            return self._array(depth)
        if kind in ("anyOf", "oneOf", "allOf"):
            return {kind: [self.schema(depth + 1) for _ in range(self.r.randrange(1, 4))]}
        if kind == "not":
            return {**self.schema(depth + 1), "not": self.schema(depth + 1)}
        if kind == "if":
            s = {"if": self.schema(depth + 1), "then": self.schema(depth + 1)}
            if self.chance(0.6):
                s["else"] = self.schema(depth + 1)
            return s
        return {"type": self.r.sample(["integer", "string", "null", "boolean", "array", "object"], self.r.randrange(1, 4))}

    def _object(self, depth: int) -> dict:
        s = {"type": "object", "properties": {n: self.schema(depth + 1) for n in self.r.sample(NAMES, self.r.randrange(4))}}
        if self.chance(0.5):
            s["required"] = self.r.sample(NAMES, self.r.randrange(3))
        x = self.r.random()
        if x < 0.3:
            s["additionalProperties"] = False
        elif x < 0.5:
            s["additionalProperties"] = self.schema(depth + 1)
        if self.chance(0.15):
            s["patternProperties"] = {"^x": self.schema(depth + 1)}
        if self.chance(0.15):
            s["propertyNames"] = self.r.choice([{"enum": NAMES[:3]}, {"pattern": "^[a-c]"}, {"maxLength": 2}])
        if self.chance(0.2):
            s["minProperties"] = self.r.randrange(3)
        if self.chance(0.2):
            s["maxProperties"] = self.r.randrange(1, 3)
        if self.chance(0.15):
            s["dependentRequired"] = {self.r.choice(NAMES): self.r.sample(NAMES, 1)}
        if self.chance(0.1):
            s["dependentSchemas"] = {self.r.choice(NAMES): self.schema(depth + 1)}
        return s

    def _array(self, depth: int) -> dict:
        s = {"type": "array"}
        if self.chance(0.3):
            s["prefixItems"] = [self.schema(depth + 1) for _ in range(self.r.randrange(1, 3))]
        if self.chance(0.7):
            s["items"] = self.r.choice([self.schema(depth + 1), False]) if "prefixItems" in s else self.schema(depth + 1)
        if self.chance(0.3):
            s["minItems"] = self.r.randrange(3)
        if self.chance(0.4):
            s["maxItems"] = self.r.randrange(1, 4)
        if self.chance(0.2):
            s["uniqueItems"] = True
        if self.chance(0.2):
            s["contains"] = self.schema(depth + 1)
            if self.chance(0.5):
                s["minContains"] = self.r.randrange(0, 3)
            if self.chance(0.5):
                s["maxContains"] = self.r.randrange(1, 3)
        return s

    def document(self) -> dict:
        """A schema, sometimes with $defs reached through $ref."""
        if self.chance(0.2):
            return {"$defs": {"d": self.schema(1)}, "type": "object",
                    "properties": {"p": {"$ref": "#/$defs/d"}, "q": self.schema(1)}}
        return self.schema()

    # --------------------------------------------------------------- instances
    def instance(self, s, depth: int = 0):
        """Drawn from the schema's shape: often valid, often not."""
        if not isinstance(s, dict) or depth > 4:
            return self.value()
        if "const" in s and self.chance(0.7):
            return copy.deepcopy(s["const"])
        if "enum" in s and self.chance(0.7):
            return copy.deepcopy(self.r.choice(s["enum"]))
        for key in ("anyOf", "oneOf", "allOf"):
            if key in s:
                return self.instance(self.r.choice(s[key]), depth + 1)
        if "if" in s:
            return self.instance(self.r.choice([s["if"], s["then"]]), depth + 1)
        kind = s.get("type")
        if isinstance(kind, list):
            kind = self.r.choice(kind)
        if kind == "object" or "properties" in s:
            out = {n: self.instance(sub, depth + 1) for n, sub in s.get("properties", {}).items() if self.chance(0.8)}
            if self.chance(0.2):
                out[self.r.choice(NAMES + ["xz"])] = self.value(1)
            return out
        if kind == "array":
            out = [self.instance(x, depth + 1) for x in s.get("prefixItems", [])]
            return out + [self.instance(s.get("items", {}), depth + 1) for _ in range(self.r.randrange(4))]
        if kind in ("integer", "number"):
            whole = self.r.randrange(-4, 8)
            return whole if kind == "integer" or self.chance(0.5) else self.r.choice([0.5, 2.25, -1.5, 3.5])
        if kind == "string":
            return self.r.choice(STRINGS)
        if kind == "boolean":
            return self.chance(0.5)
        return None if kind == "null" else self.value()

    def mutate(self, v):
        if isinstance(v, dict) and v and self.chance(0.5):
            v, key = dict(v), self.r.choice(list(v))
            if self.chance(0.5):
                del v[key]
            else:
                v[key] = self.mutate(v[key])
            return v
        if isinstance(v, list) and v and self.chance(0.5):
            v, i, x = list(v), self.r.randrange(len(v)), self.r.random()
            if x < 0.3:
                v.append(copy.deepcopy(v[i]))
            elif x < 0.6:
                v.pop(i)
            else:
                v[i] = self.mutate(v[i])
            return v
        return self.value(1)


FORMATS = ["date", "time", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "uri", "uuid"]
ODD_STRINGS = ["é", "日本", "😀x", 'ab"c', "a\\b", "2020-13-01", "12:00:00Z", "2020-01-01T00:00:00Z", "P1D", "P",
               "a@", "host.example", "-bad-", "256.1.1.1", "::1", "1::2::3", "http://x.y/z", "x:y",
               "123e4567-e89b-12d3-a456-426614174000", "123e4567", "  ", "\n"]
ODD_NUMBERS = [0, -0.0, 1.0, 1e2, 2.5, -3, 10**15, 0.1, 7, -7.5, 3]
DRAFT7 = "http://json-schema.org/draft-07/schema#"


class WideSchemaFuzz(SchemaFuzz):
    """More keywords and values: formats, unicode patterns and strings, float bounds, draft-07
    tuple items / additionalItems / dependencies, `not` of object and array keywords, recursion."""

    def leaf(self) -> dict:
        x = self.r.random()
        if x < 0.2:
            s = {"type": "string", "format": self.r.choice(FORMATS)}
            if self.chance(0.3):
                s["maxLength"] = self.r.randrange(1, 30)
            return s
        if x < 0.35:
            s = {"type": "string"}
            for key in ("minLength", "maxLength"):
                if self.chance(0.5):
                    s[key] = self.r.randrange(0, 4)
            if self.chance(0.4):
                s["pattern"] = self.r.choice(["^\\w+$", "^[^a]*$", "é", "^.$", "^\\d{2,3}$", "[😀]", "^(ab|c)+$", "\\s"])
            return s
        if x < 0.5:
            s = {"type": self.r.choice(["number", "integer"])}
            for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                if self.chance(0.35):
                    s[key] = self.r.choice([-2.5, -1, 0, 0.5, 1, 2, 7.25, 10])
            if s["type"] == "integer" and self.chance(0.3):
                s["multipleOf"] = self.r.choice([2, 3, 5])
            return s
        if x < 0.6:
            s = {"enum": [self.value(1) for _ in range(self.r.randrange(1, 5))]}
            if self.chance(0.3):
                s["type"] = self.r.choice(["object", "array", "string", "integer"])
            return s
        return super().leaf()

    def _object(self, depth: int) -> dict:
        s = super()._object(depth)
        if self.chance(0.2):
            s["not"] = self.r.choice([{"required": self.r.sample(NAMES, 1)}, {"minProperties": 2},
                                      {"properties": {self.r.choice(NAMES): self.schema(depth + 1)}},
                                      {"type": "object", "maxProperties": 0}, {"additionalProperties": False}])
        return s

    def _array(self, depth: int) -> dict:
        if self.chance(0.3):
            s = {"$schema": DRAFT7, "type": "array", "items": [self.schema(depth + 1) for _ in range(self.r.randrange(1, 3))]}
            if self.chance(0.6):
                s["additionalItems"] = self.r.choice([False, self.schema(depth + 1)])
            if self.chance(0.3):
                s["uniqueItems"] = True
            return s
        s = super()._array(depth)
        if self.chance(0.2):
            s["not"] = self.r.choice([{"contains": self.schema(depth + 1)}, {"minItems": 2},
                                      {"items": self.schema(depth + 1)}, {"uniqueItems": True}])
        return s

    def document(self) -> dict:
        x = self.r.random()
        if x < 0.1:
            node = {"type": "object", "required": ["v"], "properties": {
                "v": self.leaf(), "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}}}
            return {"$defs": {"node": node}, "$ref": "#/$defs/node"}
        if x < 0.2:
            dependency = self.r.choice([self.r.sample(NAMES, 1), {"required": self.r.sample(NAMES, 1)},
                                        {"properties": {"a": {"type": "string"}}}])
            return {"$schema": DRAFT7, "type": "object", "properties": {n: self.schema(1) for n in self.r.sample(NAMES, 2)},
                    "dependencies": {self.r.choice(NAMES): dependency}}
        return super().document()

    def instance(self, s, depth: int = 0):
        v = super().instance(s, depth)
        if isinstance(v, str) and self.chance(0.5):
            return self.r.choice(ODD_STRINGS)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and self.chance(0.4):
            return self.r.choice(ODD_NUMBERS)
        return v

    def value(self, depth: int = 0):
        return self.r.choice(ODD_STRINGS + ODD_NUMBERS) if self.chance(0.2) else super().value(depth)
