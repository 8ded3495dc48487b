"""Unit checks of request -> constraint translation (no server, no model)."""

from __future__ import annotations

import re

import pytest

from deepinfer.server.constraint_spec import (ToolDecl, forced_tool_spec, grammar_syntax, parse_tool_call,
                                              regex_for_choices, single_constraint, ConstraintSpec)
from deepinfer.server.errors import APIError


def test_choices_are_escaped_literals():
    spec = regex_for_choices(["a.b", "(x)", "c|d", "e+"], "structured_outputs.choice")
    assert re.fullmatch(spec.value, "a.b") and re.fullmatch(spec.value, "(x)") and re.fullmatch(spec.value, "c|d")
    assert not re.fullmatch(spec.value, "axb") and not re.fullmatch(spec.value, "c")


def test_grammar_syntax_detection():
    assert grammar_syntax('root ::= "a"') == "gbnf"
    assert grammar_syntax('start: "a"') == "lark"


def test_two_constraints_name_both_fields():
    with pytest.raises(APIError) as info:
        single_constraint([ConstraintSpec("regex", "a", "regex"), ConstraintSpec("grammar", "x", "ebnf")])
    assert "'regex', 'ebnf'" in info.value.message and info.value.status == 400


def test_forced_tool_schema_and_parsing():
    tools = [ToolDecl("a", None, {"type": "object", "properties": {"x": {"type": "integer"}}}),
             ToolDecl("b", None, {"type": "object"}, strict=True)]
    both = forced_tool_spec(tools, None, "tool_choice").value
    assert [alt["properties"]["name"] for alt in both["anyOf"]] == [{"const": "a"}, {"const": "b"}]
    named = forced_tool_spec(tools, "b", "tool_choice")
    assert named.value["properties"]["name"] == {"const": "b"} and named.strict
    with pytest.raises(APIError, match="not among the declared tools"):
        forced_tool_spec(tools, "c", "tool_choice")
    assert parse_tool_call('{"name": "a", "arguments": {"x": 1}}', tools) == ("a", {"x": 1})
    assert parse_tool_call('<tool_call>{"name": "b", "arguments": "{}"}</tool_call>', tools) == ("b", {})
    assert parse_tool_call('{"name": "zzz", "arguments": {}}', tools) is None
    assert parse_tool_call("hello", tools) is None


def test_auto_mode_reports_a_strict_call_only_if_it_validates():
    from deepinfer.server.format_openai import resolve_tool_call
    from deepinfer.server.job import ChoiceResult, Job, Sampling

    tool = ToolDecl("f", None, {"type": "object", "properties": {"n": {"type": "integer"}},
                                "required": ["n"]}, strict=True)
    job = Job(prompt_token_ids=[1], prompt_text="", sampling=Sampling(max_tokens=5), tool_mode="auto",
              tools=[tool])
    good = ChoiceResult(0, text='{"name": "f", "arguments": {"n": 1}}', finish_reason="stop")
    bad = ChoiceResult(0, text='{"name": "f", "arguments": {"n": "x"}}', finish_reason="stop")
    resolve_tool_call(job, good)
    resolve_tool_call(job, bad)
    assert good.tool_call == ("f", {"n": 1}) and bad.tool_call is None


def test_compile_timeout_is_a_400_and_remembered():
    import asyncio
    import threading

    from deepinfer.server.validation import ConstraintValidator

    release = threading.Event()

    class SlowCompiler:
        calls = 0

        def compile_regex(self, pattern):
            SlowCompiler.calls += 1
            release.wait(5)

    validator = ConstraintValidator(SlowCompiler(), timeout_s=0.2)
    spec = ConstraintSpec("regex", "a+", "regex")

    async def twice():
        for _ in range(2):
            with pytest.raises(APIError, match="did not compile within 0.2 s"):
                await validator.validate(spec)

    try:
        asyncio.run(twice())
    finally:
        release.set()
        validator.close()
    assert SlowCompiler.calls == 1  # the second request was refused from memory
