"""Helpers shared by the JSON Schema soundness tests: a byte-level vocabulary (every text can be
fed byte by byte), whether the matcher accepts a text, and what jsonschema says of it (the
validator `jsonschema.validate` picks: an unknown or missing `$schema` means 2020-12)."""

from __future__ import annotations

import json

import jsonschema

from deepinfer.constraints import GrammarCompiler, Matcher, Vocabulary

EOS = 256
BYTE_VOCAB = Vocabulary.from_token_bytes([bytes([i]) for i in range(256)] + [None], eos_ids=[EOS])
BYTE_COMPILER = GrammarCompiler(BYTE_VOCAB)


def accepts(schema, text: str, compiler: GrammarCompiler = BYTE_COMPILER) -> bool:
    """The matcher takes `text` (byte by byte) and may end there."""
    m = Matcher(compiler.compile_json_schema(schema))
    return all(m.accept_token(b) for b in text.encode()) and m.is_completed()


def validator(schema):
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


def valid(schema, text: str) -> bool:
    return validator(schema).is_valid(json.loads(text))


def assert_regex_verdicts(schema, values, *, exact: bool | None = True, any_depth: int = 1):
    """Lower `schema` (compact whitespace, unconstrained values `any_depth` deep), read the
    grammar as one regex and compare it with jsonschema on every value, written compactly: never
    an invalid value accepted; with `exact`, never a valid one rejected (None: unless the
    lowering notes an approximation). Returns the grammar."""
    import re

    from deepinfer.constraints.frontends.json.regex import grammar_to_regex
    from deepinfer.constraints.frontends.json.schema import lower_json_schema

    grammar = lower_json_schema(schema, whitespace="compact", any_depth=any_depth)
    if exact is None:
        exact = not [note for note in grammar.annotations if "not exact" in note]
    rx = re.compile(grammar_to_regex(grammar), re.S)
    check = validator(schema)
    for value in values:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        accepted, ok = rx.fullmatch(text) is not None, check.is_valid(value)
        assert accepted <= ok, f"accepted invalid {text}"
        assert not exact or accepted == ok, f"rejected valid {text}"
    return grammar
