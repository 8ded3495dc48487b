"""The constraint fields every protocol accepts besides its own: vLLM and SGLang extras.

`structured_outputs` (vLLM: exactly one of json / regex / choice / grammar /
json_object / structural_tag) and SGLang's top-level `regex` and `ebnf`, each
as a `ConstraintSpec` naming its field.
"""

from __future__ import annotations

from deepinfer.server.constraint_spec import (grammar_syntax, json_object_spec, regex_for_choices,
                                              schema_from_json_field, single_constraint)
from deepinfer.server.errors import bad_request
from deepinfer.server.structural_tag import structural_tag_field
from deepinfer.types import ConstraintSpec


def structured_outputs_spec(so, source: str = "structured_outputs",
                            whitespace: str | None = None) -> ConstraintSpec | None:
    """vLLM `structured_outputs`: exactly one of json / regex / choice / grammar."""
    if so is None:
        return None
    if so.whitespace_pattern is not None:
        raise bad_request(f"'{source}.whitespace_pattern' is not supported (whitespace in JSON is "
                          "bounded by the compiler)", param=f"{source}.whitespace_pattern")
    found = []
    if so.json_ is not None:
        found.append(ConstraintSpec("json_schema", schema_from_json_field(so.json_, f"{source}.json"),
                                    f"{source}.json"))
    if so.regex is not None:
        found.append(ConstraintSpec("regex", so.regex, f"{source}.regex"))
    if so.choice is not None:
        found.append(regex_for_choices(so.choice, f"{source}.choice"))
    if so.grammar is not None:
        found.append(ConstraintSpec("grammar", so.grammar, f"{source}.grammar",
                                    syntax=grammar_syntax(so.grammar)))
    if so.json_object:
        found.append(json_object_spec(f"{source}.json_object"))
    if so.structural_tag is not None:
        found.append(structural_tag_field(so.structural_tag, f"{source}.structural_tag", whitespace))
    if not found:
        raise bad_request(f"'{source}' must set one of json, regex, choice, grammar, json_object, "
                          "structural_tag", param=source)
    return single_constraint(found)


def extra_field_specs(req, whitespace: str | None = None) -> list[ConstraintSpec]:
    """Constraints from the vLLM/SGLang extra fields shared by every protocol."""
    specs = []
    so = structured_outputs_spec(req.structured_outputs, whitespace=whitespace)
    if so is not None:
        specs.append(so)
    if req.regex is not None:
        specs.append(ConstraintSpec("regex", req.regex, "regex"))
    if req.ebnf is not None:
        specs.append(ConstraintSpec("grammar", req.ebnf, "ebnf", syntax=grammar_syntax(req.ebnf)))
    return specs
