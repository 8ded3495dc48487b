"""The official `anthropic` SDK as the client of a live server on loopback."""

from __future__ import annotations

import json

import anthropic
import jsonschema
import pytest

CITY_TOOL = {"name": "get_weather", "description": "Weather for a city", "strict": True,
             "input_schema": {"type": "object", "properties": {"city": {"enum": ["Paris", "Oslo"]}},
                              "required": ["city"], "additionalProperties": False}}
ANSWER = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]},
                                           "score": {"type": "integer", "minimum": 0, "maximum": 9}},
          "required": ["answer", "score"], "additionalProperties": False}
MESSAGES = [{"role": "user", "content": "Is it sunny?"}]


@pytest.fixture(scope="module")
def client(server):
    return anthropic.Anthropic(base_url=server.url, api_key="unused", max_retries=0, timeout=60)


def test_messages_plain(client):
    m = client.messages.create(model="tiny", max_tokens=6, messages=MESSAGES, extra_body={"seed": 1})
    assert m.type == "message" and m.role == "assistant" and m.content[0].type == "text"
    assert m.usage.input_tokens > 0 and m.stop_sequence is None
    # the budget ran out exactly when the stop reason says so
    assert (m.stop_reason == "max_tokens") == (m.usage.output_tokens == 6), m
    assert m.stop_reason in ("end_turn", "max_tokens")


# (request fields, stop_reason, stop_sequence): each way a message can end, forced by a constraint
STOP_CASES = [
    ({"extra_body": {"regex": "(yes|no)", "seed": 1}}, "end_turn", None),
    # unconstrained: a constrained output is closed in time (it ends complete, "end_turn")
    ({"extra_body": {"seed": 1}, "max_tokens": 3}, "max_tokens", None),
    ({"extra_body": {"regex": "[0-9]{2}STOP[0-9]{2}", "seed": 1}, "stop_sequences": ["STOP", "HALT"]},
     "stop_sequence", "STOP"),
    ({"tools": [CITY_TOOL], "tool_choice": {"type": "tool", "name": "get_weather"}, "extra_body": {"seed": 1}},
     "tool_use", None),
]


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("fields, reason, sequence", STOP_CASES, ids=[c[1] for c in STOP_CASES])
def test_messages_stop_reasons(client, fields, reason, sequence, stream):
    kw = {"model": "tiny", "max_tokens": 160, "messages": MESSAGES, **fields}
    if stream:
        with client.messages.stream(**kw) as events:
            m = events.get_final_message()
    else:
        m = client.messages.create(**kw)
    assert (m.stop_reason, m.stop_sequence) == (reason, sequence), m
    kinds = [b.type for b in m.content]
    assert kinds == (["tool_use"] if reason == "tool_use" else ["text"]), kinds
    if reason == "stop_sequence":
        assert m.content[0].text.isdigit() and len(m.content[0].text) == 2
    if reason == "max_tokens":
        assert m.usage.output_tokens == 3


def test_messages_tool_any(client):
    m = client.messages.create(model="tiny", max_tokens=160, messages=MESSAGES, tools=[CITY_TOOL],
                               tool_choice={"type": "any", "disable_parallel_tool_use": True},
                               extra_body={"seed": 2})
    assert m.stop_reason == "tool_use"
    block = m.content[0]
    assert block.type == "tool_use" and block.name == "get_weather" and block.id.startswith("toolu_")
    jsonschema.validate(block.input, CITY_TOOL["input_schema"])


def test_messages_structured_output(client):
    m = client.messages.create(model="tiny", max_tokens=48, messages=MESSAGES, extra_body={"seed": 3},
                               output_config={"format": {"type": "json_schema", "schema": ANSWER}})
    assert m.stop_reason == "end_turn"
    jsonschema.validate(json.loads(m.content[0].text), ANSWER)


def test_messages_streaming_tool(client):
    with client.messages.stream(model="tiny", max_tokens=160, messages=MESSAGES, tools=[CITY_TOOL],
                                tool_choice={"type": "tool", "name": "get_weather"},
                                extra_body={"seed": 4}) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use" and final.content[0].input["city"] in ("Paris", "Oslo")


def test_messages_streaming_text(client):
    with client.messages.stream(model="tiny", max_tokens=8, messages=MESSAGES,
                                extra_body={"regex": "(sunny|rainy)", "seed": 5}) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text in ("sunny", "rainy") and final.content[0].text == text


def test_messages_bad_schema_is_400(client):
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.create(model="tiny", max_tokens=8, messages=MESSAGES, output_config={
            "format": {"type": "json_schema", "schema": {"type": "object", "properties": {"a": {"minimum": "x"}}}}})
    message = info.value.body["error"]["message"]
    assert "output_config.format.schema" in message and "/properties/a/minimum" in message, message


def test_messages_two_constraints_is_400(client):
    with pytest.raises(anthropic.BadRequestError, match="only one constraint"):
        client.messages.create(model="tiny", max_tokens=8, messages=MESSAGES, tools=[CITY_TOOL],
                               tool_choice={"type": "any"},
                               output_config={"format": {"type": "json_schema", "schema": ANSWER}})


def test_messages_auth(keyed_server):
    good = anthropic.Anthropic(base_url=keyed_server.url, api_key="sk-test", max_retries=0)
    assert good.messages.create(model="tiny", max_tokens=3, messages=MESSAGES).type == "message"
    bad = anthropic.Anthropic(base_url=keyed_server.url, api_key="wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError):
        bad.messages.create(model="tiny", max_tokens=3, messages=MESSAGES)


def test_messages_multi_turn_tool_result(client):
    messages = [{"role": "user", "content": "Is it sunny?"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                                   "input": {"city": "Oslo"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Sunny"},
                                             {"type": "text", "text": "So?"}]}]
    m = client.messages.create(model="tiny", max_tokens=4, messages=messages, tools=[CITY_TOOL],
                               tool_choice={"type": "none"}, system="Answer yes or no.", extra_body={"regex": "(yes|no)", "seed": 6})
    assert m.content[0].text in ("yes", "no") and m.stop_reason == "end_turn"


def test_messages_parse_pydantic(client):
    from typing import Literal

    from pydantic import BaseModel

    class Verdict(BaseModel):  # the SDK strips min/max from the schema it sends, so enums only
        answer: bool
        mood: Literal["good", "bad"]

    m = client.messages.parse(model="tiny", max_tokens=48, messages=MESSAGES, output_format=Verdict,
                              extra_body={"seed": 7})
    assert isinstance(m.parsed_output, Verdict)


def test_messages_parallel_tool_use_blocks_stream(client):
    """`any` with parallel calls allowed: every tool_use block (streamed) is valid under the schema."""
    kinds = set()
    for seed in (1, 2, 3):
        with client.messages.stream(model="tiny", max_tokens=400, messages=MESSAGES, tools=[CITY_TOOL],
                                    tool_choice={"type": "any"}, extra_body={"seed": seed}) as stream:
            final = stream.get_final_message()
        assert final.stop_reason in ("tool_use", "max_tokens"), final  # a forced call: never end_turn
        if final.stop_reason == "tool_use":
            blocks = [b for b in final.content if b.type == "tool_use"]
            assert blocks and all(b.type == "tool_use" for b in final.content)
            kinds.add(len(blocks))
            for block in blocks:
                jsonschema.validate(block.input, CITY_TOOL["input_schema"])
            assert len({b.id for b in blocks}) == len(blocks)
    assert kinds  # at least one seed finished its calls within max_tokens


def test_messages_auto_tools_stream_matches_the_body(client):
    kw = dict(model="tiny", max_tokens=12, messages=MESSAGES, tools=[CITY_TOOL], extra_body={"seed": 22})
    body = client.messages.create(**kw)
    with client.messages.stream(**kw) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert [b.model_dump() for b in final.content] == [b.model_dump() for b in body.content]
    if body.content[0].type == "text":
        assert text == body.content[0].text


def test_messages_auto_tools_with_structured_output(client):
    """`auto` + output_config.format: the answer follows the schema, or the model calls a tool."""
    m = client.messages.create(model="tiny", max_tokens=160, messages=MESSAGES, tools=[CITY_TOOL],
                               output_config={"format": {"type": "json_schema", "schema": ANSWER}},
                               extra_body={"seed": 8})
    # the answer's schema is bounded: 160 tokens always finish it (or the call)
    assert m.stop_reason in ("tool_use", "end_turn"), m
    if m.stop_reason == "tool_use":
        calls = [b for b in m.content if b.type == "tool_use"]
        assert calls
        for block in calls:
            jsonschema.validate(block.input, CITY_TOOL["input_schema"])
    else:
        assert [b.type for b in m.content] == ["text"]
        jsonschema.validate(json.loads(m.content[0].text), ANSWER)
