"""Which JSON Schema draft a document declares, and what that changes for validation.

Owns `draft_of(root)`: the `$schema` URI read into a `Draft` exactly as jsonschema's `validator_for`
reads it (an unknown URI, an https draft-07 one included, means 2020-12) (the keywords that draft does not
have, whether `$ref` hides its siblings, whether `exclusiveMinimum`/`exclusiveMaximum` are the
boolean modifiers of draft-04). Why it matters for soundness, not only for exactness: a keyword
enforced where the draft's validators ignore it makes the schema stricter at the top, but looser
under `not`, `oneOf` or `if` (where a stricter branch excludes less), so instances the schema
rejects would be generated. The tables follow jsonschema's validators keyword for keyword
(tests/constraints/test_json_drafts.py checks them against `jsonschema.DraftNValidator.VALIDATORS`).
A document without `$schema` is read as before this table existed: every keyword enforced, the
draft-07 reading of `dependencies` and array `items` + `additionalItems` (jsonschema reads it as
2020-12, which has neither: stricter where they are enforced, and json_negation reads a negated
`dependencies` there as 2020-12 does, so both readings stay sound).
Knows nothing about IR or lowering.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ConstraintError
from .jsonschema_import import load as load_jsonschema

# keywords introduced after draft-07 (2019-09 / 2020-12)
_NEWER = frozenset({"prefixItems", "dependentSchemas", "dependentRequired", "minContains", "maxContains",
                    "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"})


@dataclass(frozen=True)
class Draft:
    name: str
    ignored: frozenset = frozenset()   # keywords this draft's validators do not have
    ref_alone: bool = False            # drafts 4-7: a `$ref` makes its siblings ignored
    boolean_exclusive: bool = False    # draft-04: exclusive* are flags on minimum / maximum, and
    #                                    the float 1.0 is not an integer (json_text.value_text)


UNDECLARED = Draft("undeclared")
_DRAFTS = (
    ("draft-04", Draft("draft-04", _NEWER | {"const", "contains", "propertyNames", "if", "then", "else"},
                       ref_alone=True, boolean_exclusive=True)),
    ("draft-06", Draft("draft-06", _NEWER | {"if", "then", "else"}, ref_alone=True)),
    ("draft-07", Draft("draft-07", _NEWER, ref_alone=True)),
    ("2019-09", Draft("2019-09", frozenset({"dependencies", "prefixItems", "$dynamicRef"}))),
    ("2020-12", Draft("2020-12", frozenset({"dependencies", "additionalItems", "$recursiveRef"}))),
)
_BY_VALIDATOR = {"Draft4Validator": "draft-04", "Draft6Validator": "draft-06", "Draft7Validator": "draft-07",
                 "Draft201909Validator": "2019-09", "Draft202012Validator": "2020-12"}


def draft_of(root) -> Draft:
    """The draft jsonschema validates the document with: `validator_for` looks the `$schema` URI
    up exactly (an https draft-07 URI, a hyper-schema or a misspelled one is not draft-07 there)
    and falls back to 2020-12 for an unknown one; UNDECLARED when there is no `$schema`.
    Draft-03 (`disallow`, `extends`, `divisibleBy`, boolean `required`) is refused: read as a
    later draft its constraints would be silently dropped."""
    if not isinstance(root, dict) or "$schema" not in root:
        return UNDECLARED
    uri = root["$schema"]
    validator = None
    if isinstance(uri, str):  # (jsonschema is imported here when the schema names a draft)
        validator = load_jsonschema().validators.validator_for(root, default=None)
    name = "Draft202012Validator" if validator is None else validator.__name__
    if name == "Draft3Validator":
        raise ConstraintError("JSON Schema /$schema: draft-03 is not supported (disallow, extends, "
                              "divisibleBy and boolean required are not enforced)")
    marker = _BY_VALIDATOR.get(name, "2020-12")
    return next(draft for m, draft in _DRAFTS if m == marker)
