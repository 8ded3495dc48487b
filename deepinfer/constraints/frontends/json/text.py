"""JSON text pieces for the JSON Schema front end: whitespace, strings, literals.

Owns how decoded JSON values map to JSON text in the IR: the bounded whitespace
policies, the JSON string grammar, and the text of fixed JSON values (`const`,
`enum`). The JSON encoding of string characters (a constraint on the *decoded*
string value, such as `pattern` or `maxLength`, as an exact constraint on the
JSON text) is regular/json_strings.py, re-exported here. Knows nothing
about schemas or automata.
"""

from __future__ import annotations

import json

from deepinfer.constraints import ir
from deepinfer.constraints.errors import ConstraintError
from deepinfer.constraints.ir import CharClass, Expr, alt, literal, optional, repeat, seq
from deepinfer.constraints.regular.json_strings import ANY_CHAR, HEX, PLAIN, encode_codepoints, encode_expr, encode_text

WHITESPACE_MODES = ("default", "compact", "unbounded")
MAX_INDENT = 20  # default mode: a run is at most one newline plus this many spaces/tabs

DIGIT = CharClass.of([(ord("0"), ord("9"))])
NONZERO = CharClass.of([(ord("1"), ord("9"))])


class Whitespace:
    """Where and how much whitespace the grammar allows between JSON tokens."""

    def __init__(self, mode: str = "default"):
        if mode not in WHITESPACE_MODES:
            raise ConstraintError(f"whitespace must be one of {WHITESPACE_MODES}, not {mode!r}")
        self.mode = mode
        if mode == "compact":
            self.ws = ir.EMPTY
            self.comma, self.colon = literal(","), literal(":")
        else:
            if mode == "unbounded":
                self.ws = repeat(CharClass.of([(9, 10), (13, 13), (32, 32)]))
            else:
                # json.dumps(indent=...) and pretty printers: one line break, then indentation
                newline = alt(literal("\n"), literal("\r\n"))
                self.ws = seq(optional(newline), repeat(CharClass.of([(9, 9), (32, 32)]), 0, MAX_INDENT))
            # whitespace goes after separators only: json.dumps and pretty printers never put it
            # before "," or ":", and one run per gap keeps the automaton small
            self.comma = seq(literal(","), self.ws)
            self.colon = seq(literal(":"), self.ws)

    def open(self, bracket: str) -> Expr:
        return seq(literal(bracket), self.ws)

    def close(self, bracket: str) -> Expr:
        return seq(self.ws, literal(bracket))


# any JSON string character, including every escape JSON allows
STRING_CHAR = alt(PLAIN, seq(literal("\\"), alt(CharClass.of([(ord(c), ord(c)) for c in '"\\/bfnrt']),
                                                 seq(literal("u"), HEX, HEX, HEX, HEX))))


# One character of a string whose length is counted (minLength/maxLength count code points, as
# jsonschema does on the decoded string). STRING_CHAR counts a surrogate-pair escape
# `\ud83d\ude00` as two characters, accepting strings one character too short; here surrogate
# escapes are left out (sound: the character can still be written raw, as UTF-8; pairs as one
# counted unit cost ~15% more DFA states and pushed three MaskBench schemas over the state limit).
_HEX_NOT_D = CharClass.of([(ord("0"), ord("9")), (ord("a"), ord("c")), (ord("e"), ord("f")),
                           (ord("A"), ord("C")), (ord("E"), ord("F"))])
_D = CharClass.of([(ord("d"), ord("d")), (ord("D"), ord("D"))])
_NOT_SURROGATE = alt(seq(_HEX_NOT_D, HEX, HEX, HEX), seq(_D, CharClass.of([(ord("0"), ord("7"))]), HEX, HEX))
COUNTED_CHAR = alt(PLAIN, seq(literal("\\"), alt(CharClass.of([(ord(c), ord(c)) for c in '"\\/bfnrt']),
                                                 seq(literal("u"), _NOT_SURROGATE))))


def quoted(body: Expr) -> Expr:
    return seq(literal('"'), body, literal('"'))


def any_string() -> Expr:
    return quoted(repeat(STRING_CHAR))


def value_text(value, ws: Whitespace, float_integers: bool = True) -> Expr:
    """The JSON text of a fixed value, with the configured whitespace inside containers.
    float_integers=False (draft-04, where the float 1.0 is not an integer but the int 1 is)
    writes an integral float only as a float: json.loads must give back the value's type."""
    if isinstance(value, dict):
        if not value:
            return seq(ws.open("{"), literal("}"))
        members = []
        for i, (key, val) in enumerate(value.items()):
            if i:
                members.append(ws.comma)
            members += [quoted(encode_text(key)), ws.colon, value_text(val, ws, float_integers)]
        return seq(ws.open("{"), *members, ws.close("}"))
    if isinstance(value, list):
        if not value:
            return seq(ws.open("["), literal("]"))
        items = []
        for i, val in enumerate(value):
            if i:
                items.append(ws.comma)
            items.append(value_text(val, ws, float_integers))
        return seq(ws.open("["), *items, ws.close("]"))
    if isinstance(value, str):
        return quoted(encode_text(value))
    if isinstance(value, float) and value.is_integer() and float_integers:
        return alt(literal(json.dumps(value)), literal(str(int(value))))  # 1.0 == 1 in JSON Schema
    return literal(json.dumps(value))
