"""uniqueItems findings of the adversarial review (json_arrays._unique, constraints/unique.py).

Byte-level vocabulary (every byte a token, plus a few multi-byte tokens that carry two items or an
item and a literal), texts fed byte by byte, verdicts checked against `jsonschema`:
- uniqueItems next to `contains` was dropped (duplicates accepted) wherever the array sat;
- the mask let generation walk into a dead end (a repeated true/false/null, or an item of a
  small finite set whose values were all taken);
- unique arrays of more items than the item set has values compiled;
- the mask and next_state disagreed on a token that opens a unique array and repeats an item.
"""

import json

import jsonschema
import numpy as np
import pytest

from deepinfer.constraints import ConstraintError, GrammarCompiler, Vocabulary
from deepinfer.constraints.frontends.json.schema import lower_json_schema

MULTI = [b"[1,1,", b"false,f", b",f", b" true", b"null,n", b"],[", b'"a","a"', b"1]", b"01", b"-01", b'1"']
TOKENS = [bytes([i]) for i in range(256)] + MULTI + [None]  # bytes, multi-byte tokens, eos
VOCAB = Vocabulary.from_token_bytes(TOKENS, eos_ids=[len(TOKENS) - 1])
COMPILER = GrammarCompiler(VOCAB)
WS = set(b" \t\n\r")
CLOSERS_FIRST = sorted(range(256), key=lambda b: (bytes([b]) not in b']}"', b))  # completions first


def _valid(schema, value) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def _feed(automaton, state, text: bytes):
    for b in text:
        state = automaton.next_state(state, b)  # token id b is the byte b
        if state is None:
            return None
    return state


def _accepts(automaton, text: str) -> bool:
    state = _feed(automaton, automaton.initial_state(), text.encode())
    return state is not None and automaton.is_accepting(state)


def _allowed(automaton, state) -> list[int]:
    row = np.zeros(VOCAB.words, dtype=np.int32)
    automaton.fill_mask(state, row)
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")[: VOCAB.size].astype(bool)
    return [t for t in np.flatnonzero(bits).tolist() if TOKENS[t] is not None]


U = {"type": "array", "uniqueItems": True, "contains": {"type": "integer"}}

# (schema, valid texts, invalid texts): the invalid ones all have duplicate items
CONTAINS = [
    (U, ["[1,2]", '["a",1]', "[1,1.5]"], ["[1,1]", '["a","a",1]', "[1,1.0]"]),
    ({**U, "minContains": 2}, ["[1,2]"], ["[1,1]", "[3,2,3]"]),
    ({"type": "array", "uniqueItems": True, "contains": {"type": "object"}, "minContains": 0},
     ['["a","b"]', "[]"], ['["a","a"]']),
    ({"if": {"type": "array"}, "then": U, "else": {"type": "string"}}, ["[1,2]", '"s"'], ["[1,1]"]),
    ({"if": {"type": "string"}, "else": U}, ["[2]"], ["[2,2]"]),
    ({"allOf": [{"type": "array", "contains": {"type": "integer"}}, {"uniqueItems": True}]},
     ["[7,8]"], ["[7,7]"]),
    ({"anyOf": [U, {"type": "string"}]}, ["[1]", '"x"'], ["[1,1]"]),
    ({"type": "array", "items": U}, ["[[1],[1]]"], ["[[1,1]]"]),
    ({"type": "object", "properties": {"t": U}}, ['{"t":[2,3]}'], ['{"t":[2,2]}']),
    # a small finite item set: every order, with contains counted (maxContains too)
    ({"type": "array", "items": {"enum": [1, 2, 3]}, "uniqueItems": True, "contains": {"const": 2}},
     ["[1,2]", "[2]", "[3,2,1]"], ["[2,2]", "[1,3]"]),
    ({"type": "array", "items": {"enum": [1, 2, 3]}, "uniqueItems": True, "contains": {"enum": [1, 2]},
      "maxContains": 1}, ["[3,2]", "[1]"], ["[1,2]", "[1,1]", "[3]"]),
]


@pytest.mark.parametrize("schema,good,bad", CONTAINS, ids=[str(i) for i in range(len(CONTAINS))])
def test_unique_items_next_to_contains_is_enforced(schema, good, bad):
    automaton = COMPILER.compile_json_schema(schema).automaton
    for text, expect in [(t, True) for t in good] + [(t, False) for t in bad]:
        assert _valid(schema, json.loads(text)) == expect, text
        assert _accepts(automaton, text) == expect, (schema, text)


@pytest.mark.parametrize("schema,pointer", [
    (U, "/uniqueItems"),
    ({"type": "array", "items": U}, "/items/uniqueItems"),
    ({"type": "object", "properties": {"tags": {**U, "minContains": 2}}}, "/properties/tags/uniqueItems"),
])
def test_grammar_alone_refuses_unique_items_next_to_contains_by_its_pointer(schema, pointer):
    with pytest.raises(ConstraintError, match=f"JSON Schema {pointer}: `uniqueItems` is not enforced"):
        lower_json_schema(schema)
    skipped = lower_json_schema(schema, strict=False).annotations
    assert any(note.startswith(f"skipped {pointer}:") for note in skipped), skipped


def _dead(automaton, state, depth: int) -> bool:
    """No completion within `depth` more bytes (and no EOS): a state generation cannot leave."""
    if automaton.is_accepting(state):
        return False
    allowed = set(_allowed(automaton, state))
    if not allowed:
        return True
    steps = [b for b in CLOSERS_FIRST if b in allowed and b not in WS]  # whitespace only delays
    if not steps:  # only whitespace, and after it only whitespace again: a loop that ends nowhere
        after = automaton.next_state(state, min(allowed))
        return not automaton.is_accepting(after) and set(_allowed(automaton, after)) <= WS
    if depth == 0:
        return False  # undecided: taken as alive
    return all(_dead(automaton, automaton.next_state(state, b), depth - 1) for b in steps)


BOOLS_NULL = {"type": "array", "items": {"oneOf": [{"type": "null"}, {"type": "boolean"}]}, "uniqueItems": True}
# (schema, prefix): no token the mask allows after the prefix leads to a dead end
DEAD_ENDS = [
    ({"type": "array", "uniqueItems": True}, "[false,"),
    ({"type": "array", "uniqueItems": True}, "[null, true,"),
    ({"type": "array", "uniqueItems": True}, "[true,\n"),
    ({"type": "array", "uniqueItems": True}, "["),  # the token `false,f`
    ({"type": "array", "items": {"type": "array", "uniqueItems": True}}, "[[true],[false,"),
    ({"type": "array", "items": {"type": "string", "maxLength": 0}, "uniqueItems": True}, '[""'),
    ({"type": "array", "items": {"type": "integer", "exclusiveMinimum": -1, "exclusiveMaximum": 2},
      "uniqueItems": True}, "[0,1"),
    ({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 1}, "uniqueItems": True}, "[0,1"),
    ({"type": "array", "items": {"type": "object", "additionalProperties": False}, "uniqueItems": True}, "[{}"),
    ({"type": "array", "items": {"type": "array", "maxItems": 0}, "uniqueItems": True}, "[[]"),
    (BOOLS_NULL, "[null,true,false"),
    # a string item whose last free byte forces an earlier item's value: refused at that byte
    ({"type": "array", "items": {"type": "string", "format": "date"}, "uniqueItems": True},
     '["2024-01-01","2024-01-0'),
    ({"type": "array", "items": {"type": "string", "format": "date"}, "uniqueItems": True},
     '["2024-01-01","2024-01'),  # the token `-01`
    ({"type": "array", "items": {"type": "string", "format": "uuid"}, "uniqueItems": True},
     '["123e4567-e89b-12d3-a456-426614174000","123e4567-e89b-12d3-a456-42661417400'),
    ({"type": "array", "items": {"type": "string", "maxLength": 1}, "uniqueItems": True}, '["a","'),
    ({"type": "array", "items": {"type": "string", "maxLength": 2}, "uniqueItems": True}, '["ab","a'),
    ({"type": "array", "items": {"type": "string", "pattern": "^x[ab]$"}, "uniqueItems": True}, '["xa", "x'),
    ({"type": "object", "properties": {"d": {"type": "array", "items": {"type": "string", "format": "date"},
                                             "uniqueItems": True}}}, '{"d": ["2024-01-01", "2024-01-0'),
    # an object or number item that only a duplicate can finish: refused where that became so
    ({"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}},
                                 "required": ["id"], "additionalProperties": False}, "uniqueItems": True},
     '[{"id": 1}, {"id": '),
    ({"type": "array", "items": {"type": "object", "properties": {"d": {"type": "string", "format": "date"}},
                                 "required": ["d"], "additionalProperties": False}, "uniqueItems": True},
     '[{"d": "2024-01-01"}, {"d": "2024-01-0'),
    ({"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string"}},
                                 "required": ["n"], "additionalProperties": False}, "uniqueItems": True},
     '[{"n": "x"}, {"n": "x'),
    ({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 10}, "uniqueItems": True}, "[10, 1"),
    ({"type": "array", "items": {"type": "array", "items": {"type": "integer", "maximum": 5}, "maxItems": 1},
      "uniqueItems": True}, "[[5], ["),
    ({"type": "array", "items": {"type": "string", "pattern": "^[ab]{1,2}$"}, "uniqueItems": True},
     '["a","ab","aa",'),  # "a" would lead to "a", "aa" or "ab": all taken, two bytes deep
    ({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 5}, "uniqueItems": True}, "[1,"),
    ({"type": "array", "items": {"type": "array", "items": False}, "uniqueItems": True}, "[[]"),
    ({"type": "array", "items": {"type": "array", "items": {"type": "object", "required": ["a"],
                                                            "additionalProperties": False}},
      "uniqueItems": True}, "[[]"),
    # second review: a `,` after a number or literal item, an outer item behind an inner unique
    # array, forced tails (an enum value, a `false` member) looked along without spending depth
    ({"type": "array", "prefixItems": [{"type": "integer"}], "items": {"const": None}, "uniqueItems": True},
     "[2,null"),
    ({"type": "array", "prefixItems": [{"type": "string"}], "items": {"enum": [1, 2]}, "uniqueItems": True},
     '["a",1,2'),
    ({"type": "array", "items": {"anyOf": [{"const": [1]}, {"type": "array", "items": {"type": "string"},
                                                            "uniqueItems": True}]}, "uniqueItems": True}, "[[1],["),
    ({"type": "array", "items": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9},
                                 "uniqueItems": True}, "uniqueItems": True}, "[[9],[9"),
    ({"type": "array", "items": {"enum": ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]},
      "uniqueItems": True}, '["charlie","'),
    ({"type": "array", "items": {"anyOf": [{"type": "object", "properties": {"a": {"type": "boolean"}},
                                            "required": ["a"], "additionalProperties": False},
                                           {"type": "string"}]}, "uniqueItems": True}, '[{"a":false},{"a":'),
    # the outer item decides, not the inner unique array's: [1,2,0 can only become [1,2,0,3], taken
    ({"type": "array", "items": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 3},
                                 "minItems": 4, "maxItems": 4, "uniqueItems": True}, "uniqueItems": True},
     "[[1,2,0,3],[1,2,"),
    # closed objects of finitely many members' values are a finite item set: no fifth item opens
    ({"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 3}},
                                 "required": ["id"], "additionalProperties": False}, "uniqueItems": True},
     '[{"id": 1}, {"id": 2}, {"id": 3}, {"id": 0}'),
    ({"type": "array", "items": {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"enum": [1, 2, 3]}},
                                 "required": ["b"], "additionalProperties": False}, "uniqueItems": True},
     '[{"a": true, "b": 1}, {"b": 1}, {"a": false, "b": 1}, {"a": true, "b": 2}, {"b": 2}, {"a": false, "b": 2}, {"b": 3}'),
    # a pattern with a few strings is a finite item set: no fourth item opens after three
    ({"type": "array", "items": {"type": "string", "pattern": "^[a-c]$"}, "uniqueItems": True}, '["c","a","b"'),
    ({"type": "array", "items": {"type": "string", "pattern": "^(GET|PUT)$"}, "uniqueItems": True}, '["PUT",'),
]


@pytest.mark.parametrize("schema,prefix", DEAD_ENDS, ids=[str(i) for i in range(len(DEAD_ENDS))])
def test_mask_never_leads_into_a_dead_end(schema, prefix):
    automaton = COMPILER.compile_json_schema(schema).automaton
    state = _feed(automaton, automaton.initial_state(), prefix.encode())
    assert state is not None, prefix
    for tok in _allowed(automaton, state):
        after = automaton.next_state(state, tok)
        assert not _dead(automaton, after, 6), (schema, prefix + TOKENS[tok].decode())


UNSATISFIABLE = [
    {"type": "array", "items": {"oneOf": [{"type": "null"}]}, "minItems": 2, "uniqueItems": True},
    {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 1}, "minItems": 3, "uniqueItems": True},
    {"type": "array", "items": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 3}, "minItems": 3,
     "uniqueItems": True},
    {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "minItems": 11, "uniqueItems": True},
    {"type": "array", "items": {"type": "string", "maxLength": 0}, "minItems": 2, "uniqueItems": True},
    {"type": "array", "items": {"type": "string", "pattern": "^[a-c]$"}, "minItems": 4, "uniqueItems": True},
    {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 64}, "minItems": 66, "uniqueItems": True},
    {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 3}},
                                "required": ["id"], "additionalProperties": False}, "minItems": 5, "uniqueItems": True},
    {"type": "array", "items": {"anyOf": [{"const": 1}, {"type": "boolean"}]}, "minItems": 4, "uniqueItems": True},
    {"type": "object", "required": ["a"],
     "properties": {"a": {"type": "array", "items": {"type": "object", "maxProperties": 0}, "minItems": 2,
                          "uniqueItems": True}}},
]


@pytest.mark.parametrize("schema", UNSATISFIABLE, ids=[str(i) for i in range(len(UNSATISFIABLE))])
def test_more_distinct_items_than_values_is_unsatisfiable(schema):
    with pytest.raises(ConstraintError, match="unsatisfiable"):
        COMPILER.compile_json_schema(schema)
    # in one branch of several it only drops that branch
    automaton = COMPILER.compile_json_schema({"anyOf": [schema, {"type": "string"}]}).automaton
    assert _accepts(automaton, '"s"')


def test_more_items_than_values_capped_for_the_matcher():
    """Ten integers: the matcher keeps them distinct, the grammar stops at ten items."""
    schema = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "uniqueItems": True}
    automaton = COMPILER.compile_json_schema(schema).automaton
    full = "[" + ",".join(map(str, range(10)))
    state = _feed(automaton, automaton.initial_state(), full.encode())
    assert [TOKENS[t] for t in _allowed(automaton, state)] == [b"\t", b"\n", b"\r", b" ", b"]"]  # no `,`


@pytest.mark.parametrize("schema,prefix", [
    ({"type": "array", "uniqueItems": True}, ""),  # `[1,1,` opens the array and repeats an item
    ({"type": "object", "additionalProperties": {"type": "array", "uniqueItems": True}}, '{"k":'),
    ({"type": "array", "items": {"type": "array", "uniqueItems": True}}, "[[2],"),
    ({"type": "array", "items": {"type": "string", "format": "date"}, "uniqueItems": True}, '["2024-01-01","2024-01-'),
    ({"type": "array", "items": {"type": "string", "maxLength": 1}, "uniqueItems": True}, '["a","'),
    ({"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string"}},
                                 "required": ["n"], "additionalProperties": False}, "uniqueItems": True},
     '[{"n": "x"}, {"n": "x'),
    ({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 10}, "uniqueItems": True}, "[10, "),
    # the token that starts an item (after `[1,`) can already lead into a dead end
    ({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 5}, "uniqueItems": True}, "[1,"),
    ({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 5}, "uniqueItems": True}, "[1"),
    ({"type": "array", "items": {"type": "array", "items": {"type": "object", "required": ["a"],
                                                            "additionalProperties": False}},
      "uniqueItems": True}, "[[]"),  # only [] is an item, which the grammar does not know: no `,`
    ({"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, "[0,"),
    ({"type": "array", "items": {"type": "string", "pattern": "^[ab]{1,2}$"}, "uniqueItems": True}, '["a","ab","aa",'),
])
def test_mask_is_exactly_what_next_state_takes(schema, prefix):
    automaton = COMPILER.compile_json_schema(schema).automaton
    state = _feed(automaton, automaton.initial_state(), prefix.encode())
    allowed = set(_allowed(automaton, state))
    for tok, data in enumerate(TOKENS):
        if data is not None:
            assert (tok in allowed) == (automaton.next_state(state, tok) is not None), (prefix, data)


@pytest.mark.parametrize("pattern,strings", [
    ("^[a-c]$", ["a", "a\n", "b", "b\n", "c", "c\n"]),  # `$` also matches before a final newline
    ("^(GET|PUT)?$", ["", "\n", "GET", "GET\n", "PUT", "PUT\n"]),
    ("^x{1,2}$", ["x", "x\n", "xx", "xx\n"]),
    ("[a-c]", None),       # unanchored: any string around it
    ("^[a-z]{3}$", None),  # finite but more than the cap
    ("^a+$", None),
])
def test_finite_patterns_are_spelled_out(pattern, strings):
    from deepinfer.constraints.frontends.json.pattern import parse_pattern
    from deepinfer.constraints.frontends.json.words import spell_out

    got = spell_out(parse_pattern(pattern, exact=True), 64)
    assert got == strings
    for s in got or []:
        assert _valid({"pattern": pattern}, s)


def test_an_integer_range_too_big_to_list_still_caps_the_items():
    """0..99 is 100 values, more than are listed: counted, the grammar stops at 100 items."""
    schema = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 99}, "uniqueItems": True}
    automaton = COMPILER.compile_json_schema(schema).automaton
    state = _feed(automaton, automaton.initial_state(), ("[" + ",".join(map(str, range(100)))).encode())
    assert state is not None and b"," not in [TOKENS[t] for t in _allowed(automaton, state)]
