"""Grammars composed in the IR (deepinfer.constraints.compose): tool calls and triggered tags.

The central promise: a tool's arguments follow the language its schema has when it
is given alone (as `response_format`), token mask for token mask on a real vocabulary.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from deepinfer.constraints import ConstraintError, Matcher
from deepinfer.constraints import compose

ORDER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 2, "maxLength": 12},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "hours": {"type": "array", "items": {"type": "number"}, "maxItems": 4},
        "alerts": {"type": "boolean"},
        "note": {"type": ["string", "null"]},
    },
    "required": ["city", "days"],
    "additionalProperties": False,
}
INSTANCE = {"city": "Oslo", "days": 3, "unit": "celsius", "hours": [6, 12.5], "alerts": False, "note": None}
LOOSE = {"type": "object", "properties": {"q": {"type": "string"}}}  # other members: any JSON value
LOOSE_INSTANCE = {"q": "tea", "extra": {"deep": [1, {"x": None}]}}

SEPARATORS = {"default": (", ", ": "), "compact": (",", ":")}


def instance_text(value, whitespace: str) -> str:
    return json.dumps(value, separators=SEPARATORS[whitespace])


def allowed(matcher: Matcher) -> np.ndarray:
    return matcher.allowed_token_ids()


@pytest.mark.parametrize("whitespace", ["default", "compact"])
@pytest.mark.parametrize("schema, value", [(ORDER, INSTANCE), (LOOSE, LOOSE_INSTANCE)], ids=["closed", "open"])
def test_tool_arguments_have_the_masks_of_the_same_schema_as_response_format(
        deepseek_compiler, deepseek_tokenizer, schema, value, whitespace):
    alone = Matcher(deepseek_compiler.compile_json_schema(schema, whitespace=whitespace))
    piece = Matcher(deepseek_compiler.compile_ir(compose.json_schema(schema, whitespace)))
    ids = deepseek_tokenizer.encode(instance_text(value, whitespace), add_special_tokens=False).ids
    for step, token in enumerate(ids):
        assert np.array_equal(allowed(piece), allowed(alone)), f"masks differ before token {step}"
        assert piece.accept_token(token) and alone.accept_token(token)
    assert np.array_equal(allowed(piece), allowed(alone)), "masks differ at the end"
    assert piece.is_completed() and alone.is_completed()


@pytest.mark.parametrize("whitespace", ["default", "compact"])
def test_a_forced_call_walks_its_arguments_under_the_response_format_masks(
        deepseek_compiler, deepseek_tokenizer, whitespace):
    """Inside the arguments, the call allows exactly what the schema alone allows, plus the
    tokens that complete the arguments and go on with the call's closing brace."""
    tool = compose.ToolArguments("plan_trip", compose.json_schema(ORDER, whitespace))
    call = Matcher(deepseek_compiler.compile_ir(
        compose.tool_calls([tool], forced=True, parallel=False, whitespace=whitespace)))
    compiled = deepseek_compiler.compile_json_schema(ORDER, whitespace=whitespace)
    alone, automaton = Matcher(compiled), compiled.automaton
    gap = "" if whitespace == "compact" else " "
    assert call.accept_string(f'{{"name":{gap}"plan_trip",{gap}"arguments":{gap}')
    ids = deepseek_tokenizer.encode(instance_text(INSTANCE, whitespace), add_special_tokens=False).ids
    closing = 0
    for token in ids:
        inside, solo = set(allowed(call).tolist()), set(allowed(alone).tolist())
        assert solo - compiled.vocab.eos_ids <= inside
        for extra in inside - solo:
            text = compiled.vocab.token_bytes[extra]
            done = automaton.advance_bytes(alone.state, text[:-1])
            assert text.endswith(b"}") and done is not None and automaton.is_accepting(done), text
            closing += 1
        assert call.accept_token(token) and alone.accept_token(token)
    assert closing > 0  # the comparison saw the end of the arguments
    assert call.accept_string("}") and call.is_completed()


def test_unique_items_over_an_open_item_set_fails_closed_in_a_composed_grammar(deepseek_compiler):
    """Alone, the compiler tracks distinct items outside the grammar; a piece cannot carry that."""
    schema = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    deepseek_compiler.compile_json_schema(schema)
    with pytest.raises(ConstraintError, match="uniqueItems"):
        compose.json_schema(schema)


def accepts(compiler, grammar, text: str) -> bool:
    automaton = compiler.compile_ir(grammar).automaton
    state = automaton.advance_bytes(automaton.initial_state(), text.encode())
    return state is not None and automaton.is_accepting(state)


def test_auto_calls_follow_free_text_that_never_opens_a_call(tiny_compiler):
    zone = compose.ToolArguments("get_time", compose.regex(r'\{"zone":"(UTC|CET)"\}'))
    grammar = compose.tool_calls([zone], forced=False, parallel=True, whitespace="compact")
    call = '<tool_call>\n{"name":"get_time","arguments":{"zone":"UTC"}}\n</tool_call>'
    assert accepts(tiny_compiler, grammar, "Sure.\n" + call + "\n" + call)
    assert accepts(tiny_compiler, grammar, "no call at all")
    assert not accepts(tiny_compiler, grammar, "a bare <tool_call> opener")
    assert not accepts(tiny_compiler, grammar, call.replace("UTC", "PST"))


def test_an_answer_grammar_or_a_call(tiny_compiler):
    zone = compose.ToolArguments("get_time", compose.regex(r'\{\}'))
    grammar = compose.tool_calls([zone], forced=False, parallel=False, answer=compose.regex("(yes|no)"),
                                 whitespace="compact")
    assert accepts(tiny_compiler, grammar, "yes")
    assert accepts(tiny_compiler, grammar, '<tool_call>\n{"name":"get_time","arguments":{}}\n</tool_call>')
    assert not accepts(tiny_compiler, grammar, "maybe")


def test_forced_parallel_calls_are_a_json_array(tiny_compiler):
    zone = compose.ToolArguments("t", compose.regex("1"))
    grammar = compose.tool_calls([zone], forced=True, parallel=True)
    one = '{"name": "t", "arguments": 1}'
    assert accepts(tiny_compiler, grammar, f"[{one}, {one}]") and accepts(tiny_compiler, grammar, f"[{one}]")
    assert not accepts(tiny_compiler, grammar, one) and not accepts(tiny_compiler, grammar, "[]")


def test_triggered_tags(tiny_compiler):
    tag = compose.TaggedStructure("<f=a>", compose.regex("[0-9]+"), "</f>")
    grammar = compose.triggered_tags([tag], ["<f="])
    assert accepts(tiny_compiler, grammar, "x <f=a>12</f> y <f=a>3</f>") and accepts(tiny_compiler, grammar, "")
    assert not accepts(tiny_compiler, grammar, "x <f=b>12</f>") and not accepts(tiny_compiler, grammar, "<f=a>z</f>")
    once = compose.triggered_tags([tag], ["<f="], at_least_one=True, stop_after_first=True)
    assert accepts(tiny_compiler, once, "pre <f=a>7</f>")
    assert not accepts(tiny_compiler, once, "pre") and not accepts(tiny_compiler, once, "<f=a>7</f> post")


def test_bad_compositions_are_constraint_errors():
    body = compose.regex("a")
    with pytest.raises(ConstraintError, match="at least one tool"):
        compose.tool_calls([], forced=True, parallel=False)
    with pytest.raises(ConstraintError, match="does not start with any trigger"):
        compose.triggered_tags([compose.TaggedStructure("<g>", body, "</g>")], ["<f"])
    with pytest.raises(ConstraintError, match="empty strings"):
        compose.triggered_tags([compose.TaggedStructure("<g>", body, "</g>")], ["", "<g"])
    with pytest.raises(ConstraintError, match="unknown constraint kind"):
        compose.lower("xml", "<a/>")
    with pytest.raises(ConstraintError, match="must be an ir.Grammar"):
        compose.lower("ir", "root ::= 'a'")
    assert compose.lower("ir", body) is body
