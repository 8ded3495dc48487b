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
