"""The official `openai` SDK as the client of a live server on loopback.

Schemas are bounded (enums, maxLength, integer ranges) so that even a tiny
random model finishes them well within max_tokens; every structured answer is
checked against its schema with `jsonschema`.
"""

from __future__ import annotations

import json
import re

import jsonschema
import openai
import pytest
from pydantic import BaseModel, Field

PERSON = {"type": "object",
          "properties": {"name": {"type": "string", "maxLength": 6},
                         "age": {"type": "integer", "minimum": 0, "maximum": 99},
                         "mood": {"enum": ["happy", "sad"]}},
          "required": ["name", "age", "mood"], "additionalProperties": False}
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "strict": True,
    "parameters": {"type": "object", "properties": {"city": {"enum": ["Paris", "Oslo"]},
                                                    "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                   "required": ["city", "days"], "additionalProperties": False}}}
TIME_TOOL = {"type": "function", "function": {
    "name": "get_time", "parameters": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}},
                                       "required": ["zone"], "additionalProperties": False}}}
MESSAGES = [{"role": "user", "content": "Describe a person as JSON."}]


class Person(BaseModel):
    name: str = Field(max_length=6)
    age: int = Field(ge=0, le=99)


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


def test_chat_json_schema_strict(client):
    r = client.chat.completions.create(
        model="tiny", messages=MESSAGES, max_tokens=64, seed=1,
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}})
    choice = r.choices[0]
    assert choice.finish_reason == "stop"
    jsonschema.validate(json.loads(choice.message.content), PERSON)
    assert r.usage.completion_tokens > 0 and r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_chat_parse_pydantic(client):
    r = client.chat.completions.parse(model="tiny", messages=MESSAGES, max_tokens=64, seed=2,
                                      response_format=Person)
    parsed = r.choices[0].message.parsed
    assert isinstance(parsed, Person) and 0 <= parsed.age <= 99


def test_chat_json_object(client):
    r = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=48, seed=3,
                                       response_format={"type": "json_object"})
    if r.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(r.choices[0].message.content), dict)
    else:  # a random model may keep a string open; what exists must still be a JSON prefix
        assert r.choices[0].message.content.lstrip().startswith("{")


def test_streaming_regex_and_usage(client):
    stream = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=16, seed=4, stream=True,
                                            stream_options={"include_usage": True},
                                            extra_body={"regex": "[0-9]{3}-[0-9]{4}"})
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert len(text) == 8 and text[3] == "-" and text.replace("-", "").isdigit()
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage.completion_tokens >= 1


def test_n_and_seed_are_reproducible(client):
    kw = dict(model="tiny", messages=MESSAGES, max_tokens=8, n=2, seed=11, temperature=1.0,
              extra_body={"structured_outputs": {"choice": ["red", "green", "blue", "cyan"]}})
    a = client.chat.completions.create(**kw)
    b = client.chat.completions.create(**kw)
    assert len(a.choices) == 2 and [c.index for c in a.choices] == [0, 1]
    assert [c.message.content for c in a.choices] == [c.message.content for c in b.choices]
    assert all(c.message.content in ("red", "green", "blue", "cyan") for c in a.choices)


def test_logprobs(client):
    r = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=4, seed=5, logprobs=True,
                                       top_logprobs=2)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    assert all(lp.logprob <= 0 and len(lp.top_logprobs) <= 2 for lp in content)
    # exact token bytes: together they spell the reply (plus the end-of-sequence token's own bytes)
    assert bytes(b for lp in content for b in lp.bytes).decode("utf-8", "replace").startswith(
        r.choices[0].message.content)


def test_tools_required(client):
    r = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "Weather?"}],
                                       tools=[WEATHER_TOOL, TIME_TOOL], tool_choice="required", max_tokens=160,
                                       seed=6, parallel_tool_calls=False)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    call = choice.message.tool_calls[0]
    tools = {"get_weather": WEATHER_TOOL, "get_time": TIME_TOOL}
    jsonschema.validate(json.loads(call.function.arguments), tools[call.function.name]["function"]["parameters"])


def test_tools_named_streaming(client):
    stream = client.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "Time?"}], tools=[WEATHER_TOOL, TIME_TOOL],
        tool_choice={"type": "function", "function": {"name": "get_time"}}, max_tokens=160, seed=7, stream=True)
    calls = [tc for c in stream if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert calls[0].function.name == "get_time"
    assert json.loads("".join(c.function.arguments for c in calls))["zone"] in ("UTC", "CET")


def test_completions_endpoint(client):
    r = client.completions.create(model="tiny", prompt="The answer is", max_tokens=5, seed=8,
                                  extra_body={"regex": "(yes|no)"})
    assert r.choices[0].text in ("yes", "no")


def test_bad_schema_is_400_naming_keyword_and_pointer(client):
    bad = {"type": "object", "properties": {"a": {"type": "strnig"}}}
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=8, response_format={
            "type": "json_schema", "json_schema": {"name": "bad", "schema": bad}})
    message = info.value.body["message"]
    assert "response_format.json_schema.schema" in message and "/properties/a" in message, message


def test_bad_grammar_is_400_naming_line(client):
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=8,
                                       extra_body={"ebnf": 'root ::= "a" missing\n'})
    assert "line" in info.value.body["message"] and "missing" in info.value.body["message"]


def test_unknown_tool_choice_name_is_400(client):
    with pytest.raises(openai.BadRequestError, match="not among the declared tools"):
        client.chat.completions.create(model="tiny", messages=MESSAGES, tools=[WEATHER_TOOL],
                                       tool_choice={"type": "function", "function": {"name": "nope"}})


def test_schema_plus_tool_choice_required_is_400(client):
    with pytest.raises(openai.BadRequestError, match="only one constraint"):
        client.chat.completions.create(model="tiny", messages=MESSAGES, tools=[WEATHER_TOOL],
                                       tool_choice="required", response_format={"type": "json_object"})


def test_responses_api_text_format(client):
    r = client.responses.create(model="tiny", input="Describe a person.", max_output_tokens=64,
                                text={"format": {"type": "json_schema", "name": "person", "schema": PERSON,
                                                 "strict": True}}, extra_body={"seed": 9})
    assert r.status == "completed"
    jsonschema.validate(json.loads(r.output_text), PERSON)


def test_responses_api_parse_and_stream(client):
    parsed = client.responses.parse(model="tiny", input="Describe a person.", max_output_tokens=64,
                                    text_format=Person, extra_body={"seed": 10})
    assert isinstance(parsed.output_parsed, Person)
    events = list(client.responses.create(model="tiny", input="Say a number.", max_output_tokens=8, stream=True,
                                          extra_body={"regex": "[0-9]{2}", "seed": 1}))
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert len(deltas) == 2 and deltas.isdigit()
    assert events[-1].response.output_text == deltas


def test_responses_tools_required(client):
    flat = {"type": "function", **WEATHER_TOOL["function"]}
    r = client.responses.create(model="tiny", input="Weather?", tools=[flat], tool_choice="required",
                                max_output_tokens=160, parallel_tool_calls=False, extra_body={"seed": 12})
    call = r.output[0]
    assert call.type == "function_call" and call.name == "get_weather"
    jsonschema.validate(json.loads(call.arguments), flat["parameters"])


def test_responses_stream_function_call(client):
    flat = {"type": "function", **TIME_TOOL["function"]}
    events = list(client.responses.create(model="tiny", input="Time?", tools=[flat], tool_choice="required",
                                          max_output_tokens=160, stream=True, parallel_tool_calls=False,
                                          extra_body={"seed": 13}))
    kinds = [e.type for e in events]
    assert "response.function_call_arguments.done" in kinds and kinds[-1] == "response.completed"
    call = events[-1].response.output[0]
    assert call.type == "function_call" and json.loads(call.arguments)["zone"] in ("UTC", "CET")


def test_chat_stream_helper_parses_pydantic(client):
    with client.chat.completions.stream(model="tiny", messages=MESSAGES, max_tokens=64, seed=14,
                                        response_format=Person) as stream:
        final = stream.get_final_completion()
    assert isinstance(final.choices[0].message.parsed, Person)


def test_multi_turn_with_tool_results(client):
    messages = [{"role": "developer", "content": "Be brief."},
                {"role": "user", "content": "Weather in Oslo?"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": '{"city": "Oslo", "days": 1}'}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 C"}]
    r = client.chat.completions.create(model="tiny", messages=messages, tools=[WEATHER_TOOL], max_tokens=4,
                                       tool_choice="none", seed=15, extra_body={"regex": "(sunny|rainy)"})
    assert r.choices[0].message.content in ("sunny", "rainy")
    items = [{"role": "user", "content": "Weather in Oslo?"},
             {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city": "Oslo"}'},
             {"type": "function_call_output", "call_id": "c1", "output": "Sunny"}]
    resp = client.responses.create(model="tiny", input=items, instructions="Be brief.", max_output_tokens=4,
                                   extra_body={"regex": "(sunny|rainy)", "seed": 1})
    assert resp.output_text in ("sunny", "rainy")


def test_responses_logprobs_via_include(client):
    r = client.responses.create(model="tiny", input="n?", max_output_tokens=3, top_logprobs=1,
                                include=["message.output_text.logprobs"], extra_body={"regex": "[0-9]{3}", "seed": 2})
    part = r.output[0].content[0]
    assert len(part.text) == 3 and len(part.logprobs) >= 1
    assert all(lp.logprob <= 0 and len(lp.top_logprobs) <= 1 for lp in part.logprobs)


def test_parallel_tool_calls_each_under_its_schema(client):
    tools = {"get_weather": WEATHER_TOOL, "get_time": TIME_TOOL}
    choices = []
    for seed in (2, 3):
        choices += client.chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": "Both?"}], tools=[WEATHER_TOOL, TIME_TOOL],
            tool_choice="required", max_tokens=200, seed=seed, n=4,
            logit_bias={"14": 5}).choices  # favour ",", the separator between calls, over "]"
    # a call cut off by max_tokens is dropped; the complete ones before it are kept
    assert any(len(c.message.tool_calls or []) > 1 for c in choices)
    assert all(c.message.tool_calls for c in choices if c.finish_reason == "tool_calls")
    for choice in choices:
        assert choice.message.content is None
    for choice in [c for c in choices if c.message.tool_calls]:
        for call in choice.message.tool_calls:
            jsonschema.validate(json.loads(call.function.arguments),
                                tools[call.function.name]["function"]["parameters"])


def test_auto_tool_choice_text_never_holds_a_call_opener(client):
    """`auto` with free text: what comes back as content never contains the opener `<tool_call>`."""
    for seed in (1, 3):
        r = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "Weather?"}],
                                           tools=[WEATHER_TOOL, TIME_TOOL], max_tokens=120, seed=seed, n=4,
                                           logit_bias={"30": 8})  # "<": the opener's first character, often
        for choice in r.choices:
            assert choice.finish_reason in ("stop", "length", "tool_calls")
            assert "<tool_call>" not in (choice.message.content or "")
            assert choice.message.tool_calls or choice.message.content


def test_auto_tool_choice_calls_follow_the_schema(client):
    """`auto` + an answer regex that starts like the call opener: the model walks the shared
    `<tool_call` and then picks the answer or a call; every call is valid under its tool's schema."""
    tools = {"get_weather": WEATHER_TOOL, "get_time": TIME_TOOL}
    answers = calls = 0
    for seed in (1, 3):
        r = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "Weather?"}],
                                           tools=[WEATHER_TOOL, TIME_TOOL], max_tokens=120, seed=seed, n=4,
                                           parallel_tool_calls=False, logit_bias={"32": 6},  # ">" at the fork
                                           extra_body={"regex": "<tool_call [a-z]{1,8}"})
        for choice in r.choices:
            if choice.message.tool_calls:
                assert choice.finish_reason == "tool_calls" and len(choice.message.tool_calls) == 1
                call = choice.message.tool_calls[0]
                jsonschema.validate(json.loads(call.function.arguments),
                                    tools[call.function.name]["function"]["parameters"])
                calls += 1
            else:
                assert choice.finish_reason == "stop"
                assert re.fullmatch("<tool_call [a-z]{1,8}", choice.message.content), choice.message.content
                answers += 1
    assert calls and answers  # both branches were taken


def test_responses_parallel_function_calls(client):
    flat = [{"type": "function", **t["function"]} for t in (WEATHER_TOOL, TIME_TOOL)]
    schemas = {t["name"]: t["parameters"] for t in flat}
    for stream in (False, True):
        kw = dict(model="tiny", input="Both?", tools=flat, tool_choice="required", max_output_tokens=400,
                  extra_body={"seed": 4})
        r = (list(client.responses.create(stream=True, **kw))[-1].response if stream
             else client.responses.create(**kw))
        calls = [o for o in r.output if o.type == "function_call"]
        # a forced call: only calls come back, several of them (parallel), each with its own id; a
        # response cut off by max_output_tokens keeps the calls it completed
        assert r.status in ("completed", "incomplete") and len(calls) == len(r.output) >= 2, r.output
        assert len({c.call_id for c in calls}) == len(calls)
        for c in calls:
            jsonschema.validate(json.loads(c.arguments), schemas[c.name])


def test_auto_tools_stream_text_live_and_match_the_body(client):
    kw = dict(model="tiny", messages=[{"role": "user", "content": "Hi"}], tools=[WEATHER_TOOL], max_tokens=12,
              seed=21, n=2)
    body = client.chat.completions.create(**kw)
    chunks = [c for c in client.chat.completions.create(stream=True, **kw) if c.choices]
    for choice in body.choices:
        mine = [c.choices[0] for c in chunks if c.choices[0].index == choice.index]
        text = "".join(c.delta.content or "" for c in mine)
        assert text == (choice.message.content or "") and mine[-1].finish_reason == choice.finish_reason
        if len(text) > 1:  # streamed as generated, not in one piece at the end
            assert sum(1 for c in mine if c.delta.content) > 1


def test_responses_auto_tools_stream_text_live(client):
    flat = {"type": "function", **WEATHER_TOOL["function"]}
    kw = dict(model="tiny", input="Hi", tools=[flat], max_output_tokens=12, extra_body={"seed": 23})
    body = client.responses.create(**kw)
    events = list(client.responses.create(stream=True, **kw))
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    final = events[-1].response
    assert "".join(deltas) == final.output_text == body.output_text
    if len(final.output_text) > 1 and not any(o.type == "function_call" for o in final.output):
        assert len([d for d in deltas if d]) > 1  # streamed as generated
    kinds = [e.type for e in events]
    assert kinds.count("response.output_item.added") == len(final.output)
