"""Random object schemas over the keywords whose evaluation depends on which members are present:
`dependentSchemas` of any shape, `allOf` members with `properties`/`patternProperties`/
`additionalProperties`, `if`/`then`, and `unevaluatedProperties`; and random small objects to
check them with (test_json_object_fuzz.py)."""

from __future__ import annotations

import random

NAMES = ["a", "b", "c", "x1"]
VALUES = [0, 1, 7, -2, 2.5, "", "s", "ab", "xyz", True, None, [], {}, {"a": 1}]


class ObjectFuzz:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def scalar(self) -> dict:
        rng, r = self.rng, self.rng.random()
        if r < 0.2:
            return {"type": rng.choice(["string", "integer", "number", "boolean"])}
        if r < 0.35:
            return {"type": "string", "minLength": rng.randint(0, 2), "maxLength": rng.randint(1, 3)}
        if r < 0.45:
            return {"enum": rng.sample(VALUES[:10], 3)}
        if r < 0.55:
            return {"type": "integer", "minimum": rng.randint(-1, 2)}
        if r < 0.6:
            return {"not": {"type": "string"}}
        return {}

    def schema(self, depth: int = 0) -> dict:
        rng, s = self.rng, {}
        if rng.random() < 0.8:
            s["type"] = "object"
        if rng.random() < 0.8:
            s["properties"] = {n: self.scalar() for n in rng.sample(NAMES, rng.randint(0, 3))}
        if rng.random() < 0.3:
            s["required"] = rng.sample(NAMES, rng.randint(1, 2))
        if rng.random() < 0.2:
            s["patternProperties"] = {"^x": self.scalar()}
        if rng.random() < 0.15:
            s["additionalProperties"] = rng.choice([False, self.scalar()])
        if depth < 1 and rng.random() < 0.5:
            s["dependentSchemas"] = {n: self.dependent(depth) for n in rng.sample(NAMES, rng.randint(1, 2))}
        if depth < 1 and rng.random() < 0.4:
            s["allOf"] = [self.schema(depth + 1) for _ in range(rng.randint(1, 2))]
        if depth < 1 and rng.random() < 0.4:
            s["unevaluatedProperties"] = rng.choice([False, self.scalar()])
        if depth < 1 and rng.random() < 0.15:
            s["if"] = {"required": [rng.choice(NAMES)]}
            s["then"] = {"properties": {rng.choice(NAMES): self.scalar()}}
        return s

    def dependent(self, depth: int):
        rng, r = self.rng, self.rng.random()
        if r < 0.2:
            return {"required": rng.sample(NAMES, 1)}
        if r < 0.3:
            return rng.choice([True, False])
        if r < 0.45:
            return {"not": {"required": rng.sample(NAMES, 1)}}
        if r < 0.55:
            return {"anyOf": [{"required": [rng.choice(NAMES)]}, {"properties": {rng.choice(NAMES): self.scalar()}}]}
        return self.schema(depth + 1)

    def instance(self):
        rng = self.rng
        if rng.random() < 0.1:
            return rng.choice(VALUES)
        return {n: rng.choice(VALUES) for n in rng.sample(NAMES, rng.randint(0, 4))}
