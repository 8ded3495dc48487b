"""`response_format: structural_tag`: free text where every trigger opens a schema-checked structure."""

from __future__ import annotations

import json
import re

import openai
import pytest

from deepinfer.server.errors import APIError
from deepinfer.server.protocol.openai import ResponseFormatStructuralTag
from deepinfer.server.structural_tag import structural_tag_spec
from server_helpers import accepts

CITY = {"type": "object", "properties": {"city": {"enum": ["Paris", "Oslo"]}}, "required": ["city"],
        "additionalProperties": False}
LEGACY = {"type": "structural_tag", "triggers": ["<function="],
          "structures": [{"begin": "<function=get_weather>", "schema": CITY, "end": "</function>"}]}


@pytest.fixture(scope="module")
def compiler(tiny_model_dir):
    from deepinfer.constraints import GrammarCompiler, Vocabulary
    return GrammarCompiler(Vocabulary.from_pretrained(tiny_model_dir))


def spec_of(body: dict):
    return structural_tag_spec(ResponseFormatStructuralTag.model_validate(body), "response_format", "compact")


def test_legacy_form_language(compiler):
    spec = spec_of(LEGACY)
    call = '<function=get_weather>{"city":"Oslo"}</function>'
    for text in ("", "just text", "Checking. " + call, call + " and " + call + " done"):
        assert accepts(compiler, spec, text), text
    for text in ('<function=get_weather>{"city":"Rome"}</function>', "<function=other>{}</function>",
                 "text <function= broken", '<function=get_weather>{"city":"Oslo"}'):
        assert not accepts(compiler, spec, text), text


def test_triggered_tags_form(compiler):
    body = {"type": "structural_tag", "format": {
        "type": "triggered_tags", "triggers": ["<f"], "at_least_one": True, "stop_after_first": True,
        "tags": [{"begin": "<f=w>", "content": {"type": "json_schema", "json_schema": CITY}, "end": "</f>"}]}}
    spec = spec_of(body)
    one = '<f=w>{"city":"Paris"}</f>'
    assert accepts(compiler, spec, "hi " + one) and not accepts(compiler, spec, "no tag")
    assert not accepts(compiler, spec, one + one) and not accepts(compiler, spec, one + " more text")


@pytest.mark.parametrize("body, where", [
    ({**LEGACY, "triggers": ["<tool>"]}, "response_format.structures[0].begin"),
    ({"type": "structural_tag", "triggers": ["<f"]}, "response_format"),
    ({**LEGACY, "structures": [{"begin": "<function=x>", "schema": {"type": "strnig"}, "end": "</f>"}]},
     "response_format.structures[0].schema"),
    ({"type": "structural_tag", "format": {"type": "sequence", "elements": []}}, "response_format.format.type"),
])
def test_refusals_name_the_field(body, where):
    with pytest.raises(APIError) as info:
        spec_of(body)
    assert info.value.status == 400 and where in info.value.message, info.value.message


STRUCTURE = re.compile(r"<function=get_weather>(\{.*?\})</function>")


def test_structural_tag_over_the_sdk(server):
    """Every trigger the model writes opens a complete, valid structure. The trigger is "<", which
    the random model is nudged towards, so structures do appear; none is cut off by max_tokens (a
    structure begun near the end is closed in time)."""
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)
    fmt = {**LEGACY, "triggers": ["<"]}
    finishes = set()
    for seed in (3, 4):
        r = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "Weather?"}],
                                           max_tokens=64, seed=seed, response_format=fmt, logit_bias={"30": 8})
        text, finish = r.choices[0].message.content, r.choices[0].finish_reason
        finishes.add(finish)
        bodies = STRUCTURE.findall(text)
        assert bodies, text
        assert all(json.loads(body)["city"] in ("Paris", "Oslo") for body in bodies), text
        rest = STRUCTURE.sub("", text)
        assert "<" not in rest, text
    assert finishes <= {"stop", "length"}
    with pytest.raises(openai.BadRequestError, match=r"structures\[0\]\.begin"):
        client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "x"}], max_tokens=4,
                                       response_format={**LEGACY, "triggers": ["<x>"]})


def test_vllm_structured_outputs_structural_tag_and_json_object(server):
    import httpx

    body = {"model": "tiny", "messages": [{"role": "user", "content": "x"}], "max_tokens": 16, "seed": 1}
    tag = {k: v for k, v in LEGACY.items() if k != "type"}
    r = httpx.post(server.url + "/v1/chat/completions", timeout=60,
                   json={**body, "structured_outputs": {"structural_tag": json.dumps(tag)}})
    assert r.status_code == 200, r.text
    r = httpx.post(server.url + "/v1/chat/completions", timeout=60,
                   json={**body, "structured_outputs": {"structural_tag": {**tag, "triggers": ["<q"]}}})
    assert r.status_code == 400 and "structured_outputs.structural_tag.structures[0].begin" in r.text
    r = httpx.post(server.url + "/v1/chat/completions", timeout=60,
                   json={**body, "max_tokens": 2, "structured_outputs": {"json_object": True}})
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"].startswith("{")
