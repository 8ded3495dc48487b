"""The tool-call grammar (auto / forced, parallel or not) and parsing calls back out.

Checked on the compiled automaton of the tiny model's vocabulary: a string is
in the language iff its bytes walk from the initial state to an accepting one.
"""

from __future__ import annotations

import json

import pytest

from deepinfer.constraints.compose import BARE
from deepinfer.server.errors import APIError
from deepinfer.server.tool_calls import (TextGate, parse_tool_calls, request_constraint, resolve_tool_calls,
                                         tool_call_constraint)
from deepinfer.types import ChoiceResult, ConstraintSpec, Job, SamplingParams, ToolDecl
from server_helpers import accepts

WEATHER = ToolDecl("get_weather", None, {"type": "object", "properties": {"city": {"enum": ["Paris", "Oslo"]}},
                                         "required": ["city"], "additionalProperties": False}, strict=True)
TIME = ToolDecl("get_time", None, {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}},
                                   "required": ["zone"], "additionalProperties": False})


@pytest.fixture(scope="module")
def compiler(tiny_model_dir):
    from deepinfer.constraints import GrammarCompiler, Vocabulary
    return GrammarCompiler(Vocabulary.from_pretrained(tiny_model_dir))


def call(name: str, args: dict) -> str:
    return f'<tool_call>\n{{"name":"{name}","arguments":{json.dumps(args, separators=(",", ":"))}}}\n</tool_call>'


def test_auto_is_free_text_or_calls_under_their_schemas(compiler):
    spec = tool_call_constraint([WEATHER, TIME], forced=False, named=None, parallel=True, whitespace="compact")
    assert accepts(compiler, spec, "Hello, no tool needed.")
    assert accepts(compiler, spec, "")
    assert accepts(compiler, spec, "Let me check.\n" + call("get_weather", {"city": "Oslo"}))
    assert accepts(compiler, spec, call("get_weather", {"city": "Oslo"}) + "\n" + call("get_time", {"zone": "UTC"}))
    assert not accepts(compiler, spec, call("get_weather", {"city": "Rome"}))  # outside the enum
    assert not accepts(compiler, spec, call("get_time", {"city": "Oslo"}))  # another tool's arguments
    assert not accepts(compiler, spec, call("nope", {}))
    assert not accepts(compiler, spec, "text <tool_call> that is not a call")
    assert not accepts(compiler, spec, call("get_time", {"zone": "UTC"}) + " trailing text")


def bare(name: str, args: dict) -> str:
    return f'{{"name":"{name}","arguments":{json.dumps(args, separators=(",", ":"))}}}'


def test_parallel_false_allows_one_call(compiler):
    for forced, one in ((False, call("get_time", {"zone": "UTC"})), (True, bare("get_time", {"zone": "UTC"}))):
        spec = tool_call_constraint([WEATHER, TIME], forced=forced, named=None, parallel=False, whitespace="compact")
        assert accepts(compiler, spec, one) and not accepts(compiler, spec, one + "\n" + one)


def test_forced_calls_are_a_bare_object_or_an_array(compiler):
    spec = tool_call_constraint([WEATHER, TIME], forced=True, named=None, parallel=True, whitespace="compact")
    assert not accepts(compiler, spec, "free text") and not accepts(compiler, spec, "")
    cet, utc = bare("get_time", {"zone": "CET"}), bare("get_time", {"zone": "UTC"})
    assert accepts(compiler, spec, f"[{cet}, {utc}]") and accepts(compiler, spec, f"[{cet}]")
    assert not accepts(compiler, spec, cet + "\n" + utc) and not accepts(compiler, spec, "[]")
    assert not accepts(compiler, spec, call("get_time", {"zone": "CET"}))
    single = tool_call_constraint([WEATHER, TIME], forced=True, named=None, parallel=False, whitespace="compact")
    assert accepts(compiler, single, cet) and not accepts(compiler, single, f"[{cet}]")
    named = tool_call_constraint([WEATHER, TIME], forced=True, named="get_time", parallel=True, whitespace="compact")
    assert accepts(compiler, named, bare("get_time", {"zone": "CET"}))
    assert not accepts(compiler, named, bare("get_weather", {"city": "Oslo"}))
    assert not accepts(compiler, named, bare("get_time", {"zone": "CET"}) + "\n" + bare("get_time", {"zone": "CET"}))
    with pytest.raises(APIError, match="not among the declared tools"):
        tool_call_constraint([WEATHER], forced=True, named="zzz", parallel=True)


def test_forced_parse_and_cut_off_calls():
    two = "[" + bare("get_time", {"zone": "CET"}) + ", " + bare("get_weather", {"city": "Oslo"})
    assert parse_tool_calls(two + "]", [WEATHER, TIME], BARE).calls == [("get_time", {"zone": "CET"}),
                                                                        ("get_weather", {"city": "Oslo"})]
    assert parse_tool_calls(bare("get_time", {"zone": "UTC"}), [TIME], BARE).calls == [("get_time", {"zone": "UTC"})]
    assert parse_tool_calls(two, [WEATHER, TIME], BARE) is None  # unclosed: only with partial=True
    job = Job(prompt_token_ids=[1], prompt_text="", params=SamplingParams(max_tokens=5), tool_mode="forced",
              tools=[WEATHER, TIME])
    cut = ChoiceResult(0, text=two + ', {"name": "get_ti', finish_reason="length")
    resolve_tool_calls(job, cut)
    assert len(cut.tool_calls) == 2 and cut.text == ""
    nothing = ChoiceResult(0, text='{"name": "get_ti', finish_reason="length")
    resolve_tool_calls(job, nothing)
    assert nothing.tool_calls == [] and nothing.text == '{"name": "get_ti'
    stopped = ChoiceResult(0, text='{"name": "get_ti', finish_reason="stop", stop_sequence="me")
    resolve_tool_calls(job, stopped)  # the client's stop sequence cut the call: text, not an error
    assert stopped.tool_calls == [] and stopped.text == '{"name": "get_ti'


def test_auto_with_response_format_is_that_answer_or_a_call(compiler):
    answer = ConstraintSpec("regex", "(yes|no)", "regex")
    spec = request_constraint([answer], [WEATHER], "auto", None, True, "compact")
    assert accepts(compiler, spec, "yes") and not accepts(compiler, spec, "maybe")
    assert accepts(compiler, spec, call("get_weather", {"city": "Paris"}))
    with pytest.raises(APIError, match="only one constraint"):
        request_constraint([answer], [WEATHER], "forced", None, True, "compact")


def test_auto_with_a_structural_tag_answer_is_that_answer_or_a_call(compiler):
    from deepinfer.server.protocol.openai import ResponseFormatStructuralTag
    from deepinfer.server.structural_tag import structural_tag_spec

    fmt = ResponseFormatStructuralTag.model_validate({"type": "structural_tag", "triggers": ["<f="], "structures": [
        {"begin": "<f=a>", "schema": {"enum": [1, 2]}, "end": "</f>"}]})
    answer = structural_tag_spec(fmt, "response_format", "compact")
    spec = request_constraint([answer], [WEATHER], "auto", None, True, "compact")
    assert accepts(compiler, spec, "text <f=a>2</f> more") and accepts(compiler, spec, "")
    assert accepts(compiler, spec, call("get_weather", {"city": "Paris"}))
    assert not accepts(compiler, spec, "text <f=a>3</f>")


def test_bad_tool_schema_is_a_400_naming_the_tool_field():
    bad = ToolDecl("f", None, {"type": "object", "properties": {"a": {"type": "strnig"}}}, True,
                   "tools[0].function.parameters")
    with pytest.raises(APIError) as info:
        tool_call_constraint([bad], forced=False, named=None, parallel=True)
    assert "tools[0].function.parameters" in info.value.message and "/properties/a" in info.value.message


def test_parse_calls_with_leading_text():
    text = "Checking.\n" + call("get_weather", {"city": "Oslo"}) + "\n" + call("get_time", {"zone": "UTC"})
    parsed = parse_tool_calls(text, [WEATHER, TIME])
    assert parsed.content == "Checking."
    assert parsed.calls == [("get_weather", {"city": "Oslo"}), ("get_time", {"zone": "UTC"})]
    assert parse_tool_calls("plain text", [WEATHER]) is None
    assert parse_tool_calls(call("zzz", {}), [WEATHER]) is None
    # a closing tag inside a string argument does not end the call early
    tricky = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "</tool_call>"}}\n</tool_call>'
    assert parse_tool_calls(tricky, [WEATHER]).calls == [("get_weather", {"city": "</tool_call>"})]


def test_text_gate_streams_text_but_never_a_call():
    forced = TextGate(BARE)
    assert forced.push('{"name"') == "" and forced.finish(False) == '{"name"'
    gate = TextGate()
    pieces = ["Let me ", "check. ", "<to", "ol_call>\n{", '"name": "get_time"}', "\n</tool_call>"]
    out = [gate.push(p) for p in pieces]
    assert out == ["Let me", " check.", "", "", "", ""] and gate.finish(True) == ""
    gate = TextGate()
    out = [gate.push(p) for p in ["a <to", "y> b  ", "\n"]]
    assert "".join(out) + gate.finish(False) == "a <toy> b  \n" and out[0] == "a"


@pytest.mark.parametrize("name, samples", [
    ("arithmetic", ["1+2", "f(x, 2^3) - -4", "(1", "1 +", "x y"]),
    ("json", ['{"a": [1, 2.5e3, "x\\\\"]}', '{"a": }', "[]", "nul"]),
])
def test_a_grammar_answer_keeps_its_language_when_composed(compiler, name, samples):
    from deepinfer.constraints.frontends.ebnf.library import load_library_grammar

    text, syntax = load_library_grammar(name, "lark")
    answer = ConstraintSpec("grammar", text, "ebnf", syntax=syntax)
    composed = request_constraint([answer], [WEATHER], "auto", None, True, "compact")
    verdicts = [accepts(compiler, answer, sample) for sample in samples]
    assert any(verdicts) and not all(verdicts)
    for sample, verdict in zip(samples, verdicts):
        assert accepts(compiler, composed, sample) == verdict, sample


def test_templates_that_drop_tools_get_them_in_the_system_message(tiny_model_dir):
    from deepinfer.server.prompt import render_chat
    from deepinfer.tokenizer import Tokenizer

    class Plain:  # a template without tool support (like SmolLM2's)
        def apply_chat_template(self, messages, add_generation_prompt=True, tools=None):
            return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"

        def encode(self, text, add_special_tokens=False):
            return list(text.encode())

    text, _ = render_chat(Plain(), [{"role": "user", "content": "hi"}], [WEATHER])
    assert text.startswith("<system>You can call these functions") and '"get_weather"' in text
    assert "<tool_call>" in text and text.endswith("<user>hi<assistant>")
    text, _ = render_chat(Plain(), [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
                          [WEATHER])
    assert text.startswith("<system>Be brief.\n\nYou can call") and text.count("<system>") == 1
    tiny = Tokenizer.from_pretrained(tiny_model_dir)  # its template renders tools itself: left alone
    text, _ = render_chat(tiny, [{"role": "user", "content": "hi"}], [WEATHER])
    assert "You may call these tools" in text and "You can call these functions" not in text


def test_duplicate_tool_names_are_a_400():
    with pytest.raises(APIError, match="'get_weather' is declared 2 times"):
        request_constraint([], [WEATHER, TIME, WEATHER], "auto", None, True, None)
