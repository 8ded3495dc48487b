"""Reasoning-aware constraints: free text until the end tag, then the constrained answer.

The tiny model never writes `</think>` by itself, so this server uses a
one-token end tag ("e") and the request biases that token: the model
"reasons" for one token, then the regex constrains the answer, on the real engine.
"""

from __future__ import annotations

import anthropic
import openai
import pytest

from server_helpers import LiveServer, engine_state


@pytest.fixture(scope="module")
def thinking_server(tiny_engine):
    with LiveServer(engine_state(tiny_engine, reasoning_aware=True, reasoning_end="e",
                                 default_max_tokens=16)) as live:
        yield live


def test_answer_is_constrained_after_reasoning(thinking_server, tiny_engine):
    tag = tiny_engine.tokenizer.token_to_id("e")
    client = openai.OpenAI(base_url=thinking_server.url + "/v1", api_key="x", max_retries=0)
    kw = dict(model="tiny", messages=[{"role": "user", "content": "hi"}], max_tokens=16, seed=1,
              logit_bias={str(tag): 100}, extra_body={"regex": "[0-9]{2}"})
    r = client.chat.completions.create(**kw)
    msg = r.choices[0].message
    assert len(msg.content) == 2 and msg.content.isdigit(), msg
    assert msg.model_extra["reasoning_content"] == ""  # the tag token itself is not reasoning text
    chunks = list(client.chat.completions.create(stream=True, **kw))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == msg.content

    # a per-request opt-out: the constraint applies from the first token
    off = client.chat.completions.create(**{**kw, "extra_body": {"regex": "[0-9]{2}", "reasoning_aware": False}})
    assert off.choices[0].message.content.isdigit()


def test_anthropic_thinking_block(thinking_server):
    client = anthropic.Anthropic(base_url=thinking_server.url, api_key="x", max_retries=0)
    # No logit_bias on this protocol: the model reasons until it happens to emit the tag (or EOS),
    # about 1 token in 128 for this random model: 1000 tokens leave that no realistic chance to fail.
    m = client.messages.create(model="tiny", max_tokens=1000, messages=[{"role": "user", "content": "hi"}],
                               extra_body={"regex": "(yes|no)", "seed": 2})
    assert m.stop_reason == "end_turn", m
    assert [b.type for b in m.content] == ["thinking", "text"]
    assert m.content[0].thinking and m.content[1].text in ("yes", "no")
    with client.messages.stream(model="tiny", max_tokens=1000, messages=[{"role": "user", "content": "hi"}],
                                extra_body={"regex": "(yes|no)", "seed": 2}) as stream:
        final = stream.get_final_message()
    assert [b.type for b in final.content] == ["thinking", "text"]
    assert final.content[0].thinking == m.content[0].thinking and final.content[1].text == m.content[1].text


def test_responses_reasoning_item(thinking_server):
    client = openai.OpenAI(base_url=thinking_server.url + "/v1", api_key="x", max_retries=0)
    kw = dict(model="tiny", input="hi", max_output_tokens=1000, extra_body={"regex": "(yes|no)", "seed": 2})
    r = client.responses.create(**kw)
    assert [item.type for item in r.output] == ["reasoning", "message"], r.output
    assert r.output[0].content[0].text and r.output_text in ("yes", "no")
    events = list(client.responses.create(stream=True, **kw))
    final = events[-1].response
    assert events[-1].type == "response.completed"
    assert final.output_text == r.output_text and final.output[0].content[0].text == r.output[0].content[0].text


def test_forced_tool_call_after_reasoning(thinking_server):
    """Reasoning first, then the forced call under its schema (Anthropic: thinking + tool_use blocks)."""
    import jsonschema

    schema = {"type": "object", "properties": {"city": {"enum": ["Paris", "Oslo"]}}, "required": ["city"],
              "additionalProperties": False}
    client = anthropic.Anthropic(base_url=thinking_server.url, api_key="x", max_retries=0)
    m = client.messages.create(model="tiny", max_tokens=1000, messages=[{"role": "user", "content": "hi"}],
                               tools=[{"name": "get_weather", "input_schema": schema}],
                               tool_choice={"type": "tool", "name": "get_weather"}, extra_body={"seed": 2})
    assert m.stop_reason == "tool_use", m
    assert [b.type for b in m.content] == ["thinking", "tool_use"] and m.content[0].thinking
    jsonschema.validate(m.content[1].input, schema)
