"""uniqueItems liveness: the mask never leads into a state where no token is allowed before the
output is complete (unique_forced.dead searches every continuation along earlier items' texts).

The dead ends found: an item that equals an earlier one written differently (`12.500` after
`12.50`: texts were compared as written, so the whitespace that ended the number was not seen to
leave only the duplicate's `}`; what SmolLM2 did in `deepinfer extract --distinct-items`); and a
string or object item whose every completion is an earlier item, where telling so takes more than
a few free choices (an enum member `"ne` when "neutral" and "negative" are both taken; `"0` when
every 5-digit binary string starting with 0 is): the tracker used to look three choices ahead. Checked on a byte-level vocabulary with a few
multi-byte tokens (test_json_unique_findings' TOKENS) and on a real tokenizer (DeepSeek-V4), by
random walks that validate every completed output with `jsonschema`.
"""

from __future__ import annotations

import json
import random

import jsonschema
import numpy as np
import pytest

from deepinfer.constraints import Matcher, distinct_items

from test_json_unique_findings import COMPILER, TOKENS, _allowed, _dead, _feed

ASPECT = {"type": "object", "properties": {
    "aspect": {"enum": ["price", "quality", "delivery"]},
    "sentiment": {"enum": ["positive", "neutral", "negative"]}},
    "required": ["aspect", "sentiment"], "additionalProperties": False}
SIX = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
BINARY5 = {"type": "array", "items": {"type": "string", "pattern": "^[01]{5}$"}, "uniqueItems": True}
ZEROS = ",".join(json.dumps(f"0{i:04b}") for i in range(16))


def _texts(automaton, state) -> list[bytes]:
    return [TOKENS[t] for t in _allowed(automaton, state)]


def test_enum_items_all_used_close_the_array():
    """Both values written: `]` (and whitespace before it) only, no `,` that no item could follow."""
    for schema in ({"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": True},
                   {"type": "array", "items": {"enum": SIX}, "uniqueItems": True}):
        automaton = COMPILER.compile_json_schema(schema).automaton
        values = schema["items"]["enum"]
        state = _feed(automaton, automaton.initial_state(), ("[" + ",".join(map(json.dumps, values))).encode())
        allowed = _texts(automaton, state)
        assert b"]" in allowed and not any(b"," in t for t in allowed), allowed


@pytest.mark.parametrize("schema", [
    {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 3, "uniqueItems": True},
    {"type": "array", "items": ASPECT, "minItems": 10, "uniqueItems": True},
    {"type": "array", "items": {"type": "array", "items": {"type": "boolean"}, "maxItems": 1},
     "minItems": 4, "uniqueItems": True},
])
def test_more_items_than_distinct_values_is_refused_at_compile_time(schema):
    from deepinfer.constraints import ConstraintError

    with pytest.raises(ConstraintError, match="unsatisfiable"):
        COMPILER.compile_json_schema(schema)


LINES = {"type": "array", "uniqueItems": True, "items": {
    "type": "object", "properties": {"d": {"type": "string"}, "p": {"type": "number"}},
    "required": ["d", "p"], "additionalProperties": False}}
LINE_12_50 = '[{"d":"x","p":12.50},{"d":"x","p":12.500'

# (schema, prefix, a token that used to be allowed there and leads into a dead end)
DEEP_DEAD_ENDS = [
    # what SmolLM2 wrote under `deepinfer extract --distinct-items` (invoice lines): the same
    # number written with one more 0 is the same value, and the whitespace that ends it leaves
    # only the duplicate's `}` (numbers compare in canonical form, unique_forced.normalized)
    (LINES, LINE_12_50, b"\n"),
    (LINES, LINE_12_50, b" "),
    (LINES, '[{"d":"x","p":1.25e1},{"d":"x","p":12.5', b" "),
    # an enum member whose two values left share a prefix: "n" can only end "neutral" or
    # "negative", both taken, three choices away
    ({"type": "array", "items": ASPECT, "uniqueItems": True},
     '[{"aspect":"price","sentiment":"neutral"},{"aspect":"price","sentiment":"negative"},'
     '{"aspect":"price","sentiment":"', b"n"),
    # the same with whitespace between members (the default whitespace): texts compare without it
    ({"type": "array", "items": ASPECT, "uniqueItems": True},
     '[{"aspect": "price", "sentiment": "neutral"}, {"aspect": "price", "sentiment": "negative"},\n'
     ' {"aspect": "price", "sentiment": "', b"n"),
    # every item that starts with 0 is taken: four free choices after "0
    (BINARY5, f'[{ZEROS},"', b"0"),
    # the whole aspect taken: `"price"` can only go on to three taken items
    ({"type": "array", "items": ASPECT, "uniqueItems": True},
     '[' + ",".join(json.dumps({"aspect": "price", "sentiment": s}, separators=(",", ":"))
                    for s in ("positive", "neutral", "negative")) + ',{"aspect":"', b"p"),
    # a nested array item: [true] and [false] taken, and the inner array holds one item at most
    ({"type": "array", "uniqueItems": True, "items": {"type": "array", "items": {"type": "boolean"},
                                                      "maxItems": 1}}, "[[true],[false],[]", b","),
]


@pytest.mark.parametrize("schema,prefix,token", DEEP_DEAD_ENDS, ids=[str(i) for i in range(len(DEEP_DEAD_ENDS))])
def test_mask_never_leads_into_a_deep_dead_end(schema, prefix, token):
    automaton = COMPILER.compile_json_schema(schema).automaton
    state = _feed(automaton, automaton.initial_state(), prefix.encode())
    assert state is not None, prefix
    allowed = _texts(automaton, state)
    assert token not in allowed, (prefix, token)
    assert allowed, prefix  # and something else is
    for data in allowed:
        after = automaton.next_state(state, TOKENS.index(data))
        assert not _dead(automaton, after, 8), (prefix, data)
        assert _walk_to_end(automaton, after), (prefix, data)


def test_the_same_long_number_written_again_stops_before_its_last_digit():
    """The engine's number limits (GENERATION_JSON_OPTIONS: 17 digits) end a number: the digit
    that makes it the earlier item's value, with nothing allowed after it but `}`, is refused."""
    from deepinfer.constraints import GENERATION_JSON_OPTIONS, GrammarCompiler

    from test_json_unique_findings import VOCAB

    automaton = GrammarCompiler(VOCAB, json_options=GENERATION_JSON_OPTIONS).compile_json_schema(LINES).automaton
    number = "12.40000000000000124e+001"
    state = _feed(automaton, automaton.initial_state(), f'[{{"d":"x","p":{number}}},{{"d":"x","p":{number[:-1]}'.encode())
    allowed = _texts(automaton, state)
    assert b"1" not in allowed and b"01" not in allowed and b"2" in allowed, allowed
    for data in allowed:
        assert _walk_to_end(automaton, automaton.next_state(state, TOKENS.index(data))), data


def _walk_to_end(automaton, state, limit: int = 400) -> bool:
    """Some completion exists: depth first over allowed tokens, closers and short values first."""
    rank = {b: i for i, b in enumerate(b']}",:01tfn"abcdeilnopqrstuvy[{')}
    todo, seen = [(state, 0)], 0
    while todo and seen < limit:
        state, depth = todo.pop()
        seen += 1
        if automaton.is_accepting(state):
            return True
        allowed = _allowed(automaton, state)
        allowed = [t for t in allowed if TOKENS[t][:1] not in (b" ", b"\n", b"\t", b"\r")] or allowed
        allowed.sort(key=lambda t: -rank.get(TOKENS[t][0], 99))
        todo.extend((automaton.next_state(state, t), depth + 1) for t in allowed)
    return False


WALK_SCHEMAS = {
    "enum2": {"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": True},
    "enum6": {"type": "array", "items": {"enum": SIX}, "uniqueItems": True},
    "enum6-min3": {"type": "array", "items": {"enum": SIX}, "minItems": 3, "uniqueItems": True},
    "booleans": {"type": "array", "items": {"type": "boolean"}, "uniqueItems": True},
    "nulls-bools": {"type": "array", "items": {"type": ["boolean", "null"]}, "minItems": 2, "uniqueItems": True},
    "strings-max1": {"type": "array", "items": {"type": "string", "maxLength": 1, "pattern": "^[ab]*$"},
                     "uniqueItems": True},
    "binary3": {"type": "array", "items": {"type": "string", "pattern": "^[01]{3}$"}, "uniqueItems": True},
    "aspects": {"type": "array", "items": ASPECT, "maxItems": 8, "uniqueItems": True},
    "objects-optional": {"type": "array", "uniqueItems": True, "items": {
        "type": "object", "properties": {"a": {"enum": ["x", "y"]}, "b": {"type": "boolean"}},
        "additionalProperties": False}},
    "nested-enum": {"type": "array", "uniqueItems": True, "items": {
        "type": "array", "items": {"enum": [1, 2]}, "uniqueItems": True}},
    "nested-bools": {"type": "array", "uniqueItems": True, "items": {
        "type": "array", "items": {"type": "boolean"}, "maxItems": 2}},
    "integers-0-9": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "uniqueItems": True},
}
SMALL = set(b'ab01",[]{}tfn')  # the walk's favourite bytes: items repeat often


def random_walk(compiled, rng: random.Random, steps: int = 400) -> bytes | None:
    """Random allowed tokens (mostly of SMALL bytes, `]` and the end taken late) until the end
    token; asserts that a token is allowed at every step. None when the walk ran out of steps."""
    vocab = compiled.vocab
    m = Matcher(compiled)
    out = bytearray()
    for step in range(steps):
        allowed = [int(t) for t in m.allowed_token_ids()]
        assert allowed, f"no token allowed after {bytes(out)!r}"
        ends = [t for t in allowed if t in vocab.eos_ids]
        text = [t for t in allowed if t not in vocab.eos_ids]
        late = step > steps // 2
        if ends and (not text or rng.random() < (0.5 if late else 0.05)):
            assert m.accept_token(ends[0])
            return bytes(out)
        small = [t for t in text if set(vocab.token_bytes[t]) <= SMALL]
        pool = small if small and rng.random() < 0.8 else text
        if not late:  # keep arrays open a while: duplicates come once values run out
            pool = [t for t in pool if b"]" not in vocab.token_bytes[t]] or pool
        tok = rng.choice(pool)
        assert m.accept_token(tok)
        out += vocab.token_bytes[tok]
    return None


@pytest.mark.parametrize("name", sorted(WALK_SCHEMAS))
def test_random_walks_stay_live_and_validate(name):
    schema = WALK_SCHEMAS[name]
    compiled = COMPILER.compile_json_schema(schema, whitespace="compact")
    validator = jsonschema.Draft202012Validator(schema)
    rng = random.Random(name)
    finished = 0
    for _ in range(40):
        text = random_walk(compiled, rng)
        if text is not None:
            finished += 1
            assert validator.is_valid(json.loads(text)), text
    assert finished > 20


@pytest.mark.parametrize("name", ["aspects", "enum6", "nested-enum", "binary3"])
def test_random_walks_on_a_real_tokenizer(deepseek_compiler, name):
    """Default whitespace and real multi-byte tokens (`"n`, `ne`, `",`, ...)."""
    schema = WALK_SCHEMAS[name]
    compiled = deepseek_compiler.compile_json_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    rng = random.Random(name)
    finished = 0
    for _ in range(8):
        text = random_walk(compiled, rng, steps=200)
        if text is not None:
            finished += 1
            assert validator.is_valid(json.loads(text)), text
    assert finished > 2


def test_shipped_review_schema_with_distinct_items_stays_live(deepseek_compiler):
    """`deepinfer extract`'s default rewrite of a shipped schema: product_review's aspects."""
    from deepinfer.cli.constraint_args import load_schema

    schema = distinct_items(load_schema("product_review")[0])
    compiled = deepseek_compiler.compile_json_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    rng = random.Random(3)
    for _ in range(4):
        text = random_walk(compiled, rng, steps=300)
        if text is not None:
            assert validator.is_valid(json.loads(text)), text


def test_mask_time_stays_small():
    """The search runs on suspect tokens only, and its verdicts are remembered per state."""
    import time

    compiled = COMPILER.compile_json_schema(WALK_SCHEMAS["aspects"])
    m = Matcher(compiled)
    text = ('[{"aspect": "price", "sentiment": "neutral"}, {"aspect": "price", "sentiment": "negative"}, '
            '{"aspect": "quality", "sentiment": "neutral"}, {"aspect": "')
    assert m.accept_string(text)
    row = np.zeros((1, compiled.vocab.words), dtype=np.int32)
    start = time.perf_counter()
    for _ in range(20):
        m.fill_next_token_bitmask(row, 0)
    assert (time.perf_counter() - start) / 20 < 0.05
