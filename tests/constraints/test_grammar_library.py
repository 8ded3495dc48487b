"""The shipped grammars: tables of accepted and rejected sentences, checked against
our compiled automaton and (for lark grammars) against lark's own Earley parser."""

from __future__ import annotations

import lark
import pytest

from deepinfer.constraints import GrammarCompiler, Matcher, Vocabulary
from deepinfer.constraints.frontends.ebnf.library import available_grammars

TABLES = {
    "json": (
        ['{}', '[]', '0', '-1.5e3', '"a\\"b"', 'true', 'null', '{"a": [1, 2, {"b": null}], "c": "x"}',
         ' [ 1 ,\n 2 ] ', '[[[[]]]]', '{"":{}}'],
        ['', '{', '[1,]', '{"a"}', '{a: 1}', "'x'", '01x', 'tru', '[1 2]', '"a\nb"', '{"a":1,}'],
    ),
    "arithmetic": (
        ['1', '1+2*3', '(1 + 2) * 3', '-x ^ 2 ^ 3', 'f(1, g(2))', '1 - - 2', '2.5e3 / .5', 'a_b1 * 3'],
        ['', '1 +', '()', '1 2', 'f(', '(1', '1 * / 2', 'F(1)', '1,2'],
    ),
    "sql": (
        ['SELECT * FROM t', 'select a, b AS c from t;',
         'SELECT DISTINCT t.a, COUNT(*) FROM t JOIN u ON t.id = u.id WHERE t.a > 1 AND u.b IS NOT NULL',
         "SELECT a FROM t LEFT JOIN u AS v ON a = v.a WHERE name LIKE 'x%' GROUP BY a HAVING COUNT(a) > 2 "
         "ORDER BY a DESC, b LIMIT 10 OFFSET 5",
         'SELECT x FROM t WHERE x IN (1, 2, 3) OR NOT x BETWEEN 1 AND 5',
         'SELECT (a + 1) * 2 FROM (SELECT a FROM t) AS s', 'SELECT p.x FROM posts p JOIN u ON u.id = p.a'],
        ['', 'SELECT', 'SELECT * FROM', 'SELECT a FROM t WHERE x =', 'SELECT a FROM t LIMIT x',
         'SELECTa FROM t', 'SELECT a FROM t WHERE xAND y', 'SELECT a FROMt',
         'SELECT a, FROM t', 'DELETE FROM t', 'SELECT a FROM t ORDER a', "SELECT 'x FROM t"],
    ),
    "csv": (
        ['a,b\n', 'name,age\nbob,3\n', 'x\n"q,uo""te"\n\n', 'a,b,c\r\n1,,3\r\n', '"h 1",h2\nv,"multi\nline"\n'],
        ['', 'a,b', ',a\n', 'a\n"unterminated\n', 'a\nb"c\n'],
    ),
    "chess": (
        ['1. e4', '1. e4 e5 2. Nf3 Nc6 3. Bb5 a6', '1. d4 d5 2. c4 dxc4 3. O-O-O+ exd8=Q#',
         '1. Nbd2 R1a3 1-0', '12. Qh4xe7 *', '1. e4 1/2-1/2'],
        ['', '1.e4', 'e4', '1. e9', '1. Ke', '1. e4  e5', '0. e4', '1. O-O-O-O', '1. e4 e5 e6'],
    ),
    "python": (
        ['def f():\n    pass\n',
         'def add(a: int, b: int = 0) -> int:\n    return a + b\n',
         'def g(xs: list[int]) -> None:\n    total = 0\n    for x in xs:\n        total += x\n'
         '    if total > 10:\n        print("big")\n    elif total == 0:\n        pass\n'
         '    else:\n        return None\n',
         'def h(s):\n    while not done(s.items[0]):\n        s = step(s, [1, 2], \'x\')\n'],
        ['', 'def f():\n', 'def f():\npass\n', 'def f()\n    pass\n', 'def f():\n    if x:\n    pass\n',
         'def f():\n      pass\n', 'def 1f():\n    pass\n', 'def f():\n    return a +\n'],
    ),
}


@pytest.fixture(scope="module")
def byte_compiler() -> GrammarCompiler:
    vocab = Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_ids=[256])
    return GrammarCompiler(vocab)


def accepts(compiled, text: str) -> bool:
    m = Matcher(compiled)
    return m.accept_string(text) and m.is_completed()


def test_every_shipped_grammar_has_a_table():
    assert set(available_grammars()) == set(TABLES)
    assert set(available_grammars()["json"]) == {"lark", "gbnf"}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_tables_against_our_automaton(byte_compiler, name):
    good, bad = TABLES[name]
    for syntax in available_grammars()[name]:
        compiled = byte_compiler.compile_grammar(name=name, syntax=syntax)
        for text in good:
            assert accepts(compiled, text), (syntax, text)
        for text in bad:
            assert not accepts(compiled, text), (syntax, text)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_tables_against_lark(name):
    paths = available_grammars()[name]
    parser = lark.Lark(paths["lark"].read_text(), parser="earley", lexer="dynamic")
    good, bad = TABLES[name]
    for text in good:
        parser.parse(text)
    for text in bad:
        with pytest.raises(lark.exceptions.LarkError):
            parser.parse(text)


def test_compile_by_name_and_explicit_syntax(byte_compiler):
    a = byte_compiler.compile_grammar(name="json")
    b = byte_compiler.compile_grammar(name="json.gbnf")
    assert accepts(a, " [1] ") and not accepts(b, " [1] x")
    assert accepts(b, "[1]")
    assert byte_compiler.compile_grammar(name="json", syntax="gbnf").grammar.start == "root"
