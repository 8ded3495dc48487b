"""EBNF front ends: lark and GBNF text -> IR, and their located errors."""

from __future__ import annotations

import re

import pytest

from deepinfer.constraints import ConstraintError, ir
from deepinfer.constraints.frontends.ebnf import lower_grammar
from deepinfer.constraints.regular.nfa import build_nfa
from deepinfer.constraints.regular.dfa import Limits, determinize


def full_match(grammar: ir.Grammar, text: str) -> bool:
    """Membership for non-recursive grammars, through the core's DFA."""
    dfa = determinize(build_nfa(grammar), Limits())
    state = 0
    for byte in text.encode():
        state = int(dfa.trans[state, byte])
        if state < 0:
            return False
    return bool(dfa.accepting[state])


# ------------------------------------------------------------------- lark

def test_lark_rules_terminals_and_printing():
    g = lower_grammar('start: "a" B* | c\nB: "b"\nc: "c"+\n')
    text = str(g)
    assert 'start ::= "a" B* | c' in text
    assert 'B     ::= "b"' in text
    assert g.start == "start"


@pytest.mark.parametrize("grammar, good, bad", [
    ('start: "ab"i', ["ab", "AB", "aB"], ["a", "abc"]),
    ('start: /a.c/s', ["abc", "a\nc"], ["ac"]),
    ('start: /a.c/', ["abc"], ["a\nc"]),
    ('start: /[a-c]+/i', ["aBc", "CCC"], ["d", ""]),
    ('start: "x" ~ 2', ["xx"], ["x", "xxx"]),
    ('start: "x" ~ 1..3', ["x", "xx", "xxx"], ["", "xxxx"]),
    ('start: A\nA: "0".."9"', ["5"], ["a", "55"]),
    ('start: ["a"] "b"', ["b", "ab"], ["a"]),
    ('start: ("a" | "b")+ "c"?', ["abba", "ac"], ["c", ""]),
    ('start: "\\n" "\\x41" "\\u00e9"', ["\nAé"], ["nAé"]),
    ('start: INT\n%import common.INT', ["0", "123"], ["", "1.5"]),
    ('start: NUMBER\n%import common.NUMBER', ["1", "1.5", ".5", "1e9", "2.E-3"], ["e9", "-1"]),
    ('start: ESCAPED_STRING\n%import common.ESCAPED_STRING', ['""', '"a\\"b"', '"\\\\"'],
     ['"a"b"', '"\\"', '"a\nb"']),
    ('start: CNAME\n%import common (CNAME)', ["_x1", "abc"], ["1x"]),
    ('start: W\n%import common.WORD -> W', ["word"], ["w0"]),
    ('start: "a" "b"\n%import common.WS\n%ignore WS', ["ab", "a b", " a \n b ", "a\tb\n"], ["a b c"]),
    ('start: A\nA: "a" "b"\n%import common.WS\n%ignore WS', ["ab", " ab "], ["a b"]),
    ('start: "a" "b"\n%ignore " "', ["a  b"], ["a\tb"]),
])
def test_lark_languages(grammar, good, bad):
    g = lower_grammar(grammar)
    for text in good:
        assert full_match(g, text), text
    for text in bad:
        assert not full_match(g, text), text


def test_lark_case_insensitive_follows_python_re():
    g = lower_grammar('start: "sk"i')
    assert full_match(g, "\u017f\u212a")  # long s and Kelvin sign, as re.IGNORECASE
    assert re.fullmatch("(?i)sk", "\u017f\u212a")


def test_lark_override_and_extend():
    g = lower_grammar('start: A\nA: "a"\n%override A: "b"\n%extend A: "c"\n')
    assert full_match(g, "b") and full_match(g, "c") and not full_match(g, "a")


def test_lark_start_option():
    g = lower_grammar('start: "a"\nother: "b"\n', start="other")
    assert full_match(g, "b") and not full_match(g, "a")


LARK_ERRORS = [
    ('start: foo\n', r"undefined rule 'foo' used at line 1 column 8"),
    ('start: "a"\n  | (\n', r"line 2 column 6: syntax error"),
    ('x: "a"\n', r"start rule 'start' is not defined"),
    ('start: a\na: a "x"\n', r"rule 'a' at line 2 column 1 derives nothing"),
    ('start: /[^\\x00-\\U0010FFFF]/\n', r"language is empty"),
    ('start: /a(?=b)/\n', r"line 1 column 8: .*lookahead"),
    ('start: /a/m\n', r"line 1 column 8: unsupported lark feature: regex flag 'm'"),
    ('start: "a"\nt{x}: x\n', r"line 2 column 1: unsupported lark feature: template rule"),
    ('start: t{"a"}\n', r"line 1 column 8: unsupported lark feature: template usage"),
    ('%import python.NAME\nstart: NAME\n', r"line 1 column 9: unsupported lark feature: %import python.NAME"),
    ('%declare A\nstart: A\n', r"line 1 column 10: unsupported lark feature: %declare"),
    ('start: "a"\nstart: "b"\n', r"line 2 column 1: start is defined more than once"),
    ('start: A\nA: "a" b\nb: "x"\n', r"line 2 column 8: terminal definitions cannot use rule b"),
    ('start: "x" ~ 3..1\n', r"line 1 column 12: .*reversed"),
    ('%import common.NOPE\nstart: "a"\n', r"line 1 column 9: common.lark has no terminal NOPE"),
    ('start: "x"\n  | "\\ud83d"\n', r"line 2 column 5: .*U\+D83D is not a Unicode scalar value"),
]


@pytest.mark.parametrize("grammar, message", LARK_ERRORS)
def test_lark_errors_name_line_and_column(grammar, message):
    with pytest.raises(ConstraintError, match=message):
        lower_grammar(grammar)


# ------------------------------------------------------------------- GBNF

def test_gbnf_printing_and_multiline_rules():
    g = lower_grammar('root ::= item ("," item)*  # list\nitem ::=\n  [a-z]+\n  | "\\"" [^"]* "\\""\n',
                      syntax="gbnf")
    assert str(g).splitlines()[0] == 'root ::= item ("," item)*'
    assert full_match(g, 'ab,"x y",c')
    assert not full_match(g, "ab,")


@pytest.mark.parametrize("grammar, good, bad", [
    ('root ::= "a"{2}', ["aa"], ["a", "aaa"]),
    ('root ::= "a"{2,}', ["aa", "aaaa"], ["a"]),
    ('root ::= "a"{1,3}', ["a", "aaa"], ["", "aaaa"]),
    ('root ::= "a"{,2}', ["", "aa"], ["aaa"]),
    ('root ::= [^a-c\\n]', ["d", "é"], ["a", "\n"]),
    ('root ::= [\\x41-\\x43\\u00e9]', ["A", "C", "é"], ["D"]),
    ('root ::= "\\x41\\u00e9\\U0001F600\\t"', ["Aé\U0001F600\t"], ["A"]),
    ('root ::= . "b"', ["ab", "\nb"], ["b"]),
    ('root ::= ("x" | "y")? z\nz ::= "z"', ["z", "xz"], ["xyz"]),
    ('root ::= [-a]+', ["-a-"], ["b"]),
    ('root ::= [a-]', ["-", "a"], ["b"]),
])
def test_gbnf_languages(grammar, good, bad):
    g = lower_grammar(grammar, syntax="gbnf")
    for text in good:
        assert full_match(g, text), text
    for text in bad:
        assert not full_match(g, text), text


GBNF_ERRORS = [
    ('root ::= foo\n', r"undefined rule 'foo' used at line 1 column 10"),
    ('root ::= "a" (\n', r"line 1 column 14: syntax error, unclosed '\('"),
    ('x ::= "a"\n', r"no start rule 'root'"),
    ('root ::= a\na ::= a "x"\n', r"rule 'a' at line 2 column 1 derives nothing"),
    ('root ::= [^\\x00-\\U0010FFFF]\n', r"language is empty: root at line 1 column 1"),
    ('root ::= "a\n', r"line 1 column 10: unterminated string"),
    ('root ::= [a-\n', r"line 1 column 10: unterminated character class"),
    ('root ::= "\\q"\n', r"line 1 column 11: unknown escape"),
    ('root ::= "a"{3,1}\n', r"line 1 column 13: .*reversed"),
    ('root ::= "a"\nroot ::= "b"\n', r"line 2 column 1: rule 'root' is defined more than once"),
    ('root ::= "a" )\n', r"line 1 column 14: syntax error"),
    ('root ::= (= "a")\n', r"lookahead"),
]


@pytest.mark.parametrize("grammar, message", GBNF_ERRORS)
def test_gbnf_errors_name_line_and_column(grammar, message):
    with pytest.raises(ConstraintError, match=message):
        lower_grammar(grammar, syntax="gbnf")


def test_unknown_syntax_and_library_errors():
    with pytest.raises(ConstraintError, match="unknown grammar syntax"):
        lower_grammar("x", syntax="yacc")
    with pytest.raises(ConstraintError, match=r"no shipped grammar named 'nope'; available: .*json"):
        lower_grammar(name="nope")


def test_compile_ir_refuses_a_literal_no_utf8_text_holds():
    from deepinfer.constraints import GrammarCompiler, Vocabulary

    vocab = Vocabulary.from_token_bytes([b"a", None], eos_ids=[1])
    with pytest.raises(ConstraintError, match="U\\+D83D"):
        GrammarCompiler(vocab).compile_ir(ir.Grammar({"start": ir.literal("a\ud83d")}, "start", []))
