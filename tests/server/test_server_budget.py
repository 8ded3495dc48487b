"""max_tokens against a constraint's need, over real HTTP on loopback: too few tokens for any
complete output is a 400 naming max_tokens before generation; a budget that just holds one gives a
complete output that validates (jsonschema)."""

from __future__ import annotations

import json

import httpx
import jsonschema

from deepinfer.constraints import check_budget  # noqa: F401 - the API the server uses
from deepinfer.constraints.completion import needed_tokens

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
          "required": ["city", "population"], "additionalProperties": False}


def _body(max_tokens: int) -> dict:
    return {"model": "tiny", "max_tokens": max_tokens, "temperature": 1.5, "seed": 3,
            "messages": [{"role": "user", "content": "a city"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": SCHEMA}}}


def test_too_few_tokens_is_a_400_and_enough_gives_a_complete_output(server, tiny_engine):
    compiled = tiny_engine.compiler.compile_json_schema(SCHEMA, whitespace="compact")
    need = needed_tokens(compiled)
    with httpx.Client(base_url=server.url, timeout=60) as client:
        refused = client.post("/v1/chat/completions", json=_body(need - 1))
        assert refused.status_code == 400, refused.text
        error = refused.json()["error"]
        assert error["param"] == "max_tokens" and f"at least {need}" in error["message"]
        for extra in (0, 4):
            ok = client.post("/v1/chat/completions", json=_body(need + extra))
            assert ok.status_code == 200, ok.text
            choice = ok.json()["choices"][0]
            assert choice["finish_reason"] in ("stop", "length"), choice  # complete either way
            jsonschema.validate(json.loads(choice["message"]["content"]), SCHEMA)
