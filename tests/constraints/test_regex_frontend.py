"""Regex front end: acceptance vs Python's re, printed IR, and error positions."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deepinfer.constraints import ConstraintError, GrammarCompiler, Limits, Matcher, Vocabulary
from deepinfer.constraints.frontends.regex import lower_regex

BYTE_VOCAB = Vocabulary.from_token_bytes([bytes([i]) for i in range(256)] + [None], eos_ids=[256])
COMPILER = GrammarCompiler(BYTE_VOCAB)


def reference(pattern: str) -> re.Pattern:
    """Python's re for the same pattern ((?<name>...) is spelled (?P<name>...) there)."""
    flags = re.ASCII if pattern.isascii() else 0  # hypothesis cannot draw [α-ω] under re.ASCII
    return re.compile(re.sub(r"\(\?<(?=[A-Za-z_])", "(?P<", pattern), flags)


def matches(pattern: str, text: str) -> bool:
    m = Matcher(COMPILER.compile_regex(pattern))
    return m.accept_string(text) and m.is_completed()


# (pattern, strings to try); the expected answer is re.fullmatch under re.ASCII
# (which agrees with the ECMA-262 semantics we implement on ASCII text).
TABLE = [
    (r"abc", ["abc", "ab", "abcd", ""]),
    (r"a|b|", ["a", "b", "", "ab"]),
    (r"[a-c]+x?", ["a", "abcx", "x", "abcxx", "cab"]),
    (r"[^a-c]", ["a", "d", "\n", "é", "ab"]),
    (r"[]a]", ["]", "a", "b"]),
    (r"[a-]z", ["az", "-z", "bz"]),
    (r"\d{2,3}", ["1", "12", "123", "1234", "ab"]),
    (r"\d{2,}", ["1", "12", "123456"]),
    (r"\d{,2}", ["", "1", "12", "123"]),
    (r"x{3}", ["xx", "xxx", "xxxx"]),
    (r"\w+\s\W", ["ab_9 !", "ab  !", "a\ta", "a\n."]),
    (r"\D\S", ["a!", "1a", "a "]),
    (r"a.c", ["abc", "a\nc", "aéc", "ac"]),
    (r"(?:ab)+|(?P<x>cd)*|(?<y>e)", ["abab", "cdcd", "", "e", "abcd"]),
    (r"a*?b+?c??d{1,2}?", ["bd", "aabbcdd", "ac"]),
    (r"^foo$", ["foo", "fo"]),
    (r"^a|b$", ["a", "b", "ab"]),
    (r"\x41\u0042\n\t\.\*\\", ["AB\n\t.*\\", "AB"]),
    (r"[\x00-\x1f\\\]]", ["\x05", "\\", "]", "a"]),
    (r"(?:a{2}){3}", ["a" * 6, "a" * 5]),
    (r"x{a}", ["x{a}", "x"]),
    (r"(a|ab)(c|bcd)(d*)", ["abcd", "acd", "abbcdd"]),
    (r"[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?", ["1", "1.5", "1.5e-3", "1.", "e5", "1e+"]),
    (r"(?#comment)a", ["a"]),
    (r"日本語|[α-ω]+|\U0001F600", ["日本語", "αβγ", "😀", "日本", "a"]),
]


@pytest.mark.parametrize("pattern,strings", TABLE)
def test_acceptance_matches_python_re(pattern, strings):
    rx = reference(pattern)
    for text in strings:
        assert matches(pattern, text) == bool(rx.fullmatch(text)), (pattern, text)


@pytest.mark.parametrize("pattern", [p for p, _ in TABLE])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_random_strings_agree_with_re(pattern, data):
    rx = reference(pattern)
    text = data.draw(st.one_of(st.from_regex(rx, fullmatch=True),
                               st.text(alphabet="abcdxe19.-_ \n]\\é日", max_size=8)))
    if "\\s" in pattern or "\\S" in pattern:  # ECMA \s differs from re.ASCII on non-ASCII
        text = text.encode("ascii", "ignore").decode()
    assert matches(pattern, text) == bool(rx.fullmatch(text)), (pattern, text)


@pytest.mark.parametrize("pattern,printed", [
    (r"\d{4}-(a|bc)+", 'start ::= [0-9]{4} "-" ("a" | "bc")+'),
    (r"[^\n]*", "start ::= [\\x00-\\t\\x0b-\ud7ff\ue000-\U0010ffff]*"),
    (r"a?b*c+", 'start ::= "a"? "b"* "c"+'),
    (r"(?:x|y){2,5}", 'start ::= ("x" | "y"){2,5}'),
    (r"\w", "start ::= [0-9A-Z_a-z]"),
    (r"", 'start ::= ""'),
])
def test_printed_ir(pattern, printed):
    assert str(lower_regex(pattern)) == printed


def test_surrogate_free_negation():
    cls = lower_regex(r"[^a]").rules["start"]
    assert all(not (0xD800 <= lo <= 0xDFFF) for lo, _ in cls.ranges)


@pytest.mark.parametrize("pattern,construct,offset", [
    (r"(?=a)b", "lookahead", 0),
    (r"a(?!b)", "negative lookahead", 1),
    (r"ab(?<=b)", "lookbehind", 2),
    (r"(?<!a)b", "negative lookbehind", 0),
    (r"(a)\1", "backreference", 3),
    (r"(?P<n>a)(?P=n)", "backreference", 8),
    (r"x\k<n>", "named backreference", 1),
    (r"a(?>bc)", "atomic group", 1),
    (r"ab*+", "possessive", 3),
    (r"(?i)abc", "inline flags", 0),
    (r"a\bc", "word boundary", 1),
    (r"\p{L}", "Unicode property", 0),
    (r"a^b", "anchor '^'", 1),
    (r"a$b", "anchor '$'", 1),
    (r"(a$)", "anchor '$'", 2),
    (r"(ab", "unterminated group", 0),
    (r"ab)", "unbalanced ')'", 2),
    (r"[ab", "unterminated character set", 0),
    (r"[z-a]", "bad character range", 1),
    (r"*a", "nothing to repeat", 0),
    (r"a**", "multiple repeat", 2),
    (r"a{3,2}", "min repeat greater than max", 1),
    (r"a{1,200000}", "exceeds the limit", 1),
    (r"\xZZ", "bad escape", 0),
    (r"\q", "bad escape", 0),
    (r"[[:alpha:]]", "POSIX", 1),
])
def test_errors_name_construct_and_offset(pattern, construct, offset):
    with pytest.raises(ConstraintError) as info:
        lower_regex(pattern)
    message = str(info.value)
    assert construct in message and f"at offset {offset}" in message, message


def test_empty_language_is_an_error():
    with pytest.raises(ConstraintError, match="matches no string"):
        COMPILER.compile_regex(r"a[^\x00-\U0010ffff]")


def test_state_limit_and_time_budget_end_in_errors():
    small = GrammarCompiler(BYTE_VOCAB, limits=Limits(max_dfa_states=200))
    with pytest.raises(ConstraintError, match="exceeds 200 DFA states"):
        small.compile_regex(r"(a|b)*a(a|b){12}")
    tiny_nfa = GrammarCompiler(BYTE_VOCAB, limits=Limits(max_nfa_states=1000))
    with pytest.raises(ConstraintError, match="NFA states"):
        tiny_nfa.compile_regex(r"(?:[a-z]{100}){100}")
    no_time = GrammarCompiler(BYTE_VOCAB, limits=Limits(time_budget_s=0.0))
    with pytest.raises(ConstraintError, match="exceeded"):
        no_time.compile_regex(r"(a|b)*a(a|b){8}")


def test_time_budget_counts_cpu_not_wall_time(monkeypatch):
    """Time the compiling thread spends off the CPU (a loaded machine) does not count: a 0.05 s
    budget survives a 0.2 s stall inside the subset construction (the Python one, where a stall
    can be injected; the compiled one reads the same per-thread CPU clock)."""
    import time

    from deepinfer.constraints.regular import dfa, native_subset

    monkeypatch.setattr(native_subset, "_lib", [None])

    real, stalled = dfa._successors, []

    def stall_once(*args):
        if not stalled:
            stalled.append(time.sleep(0.2))
        return real(*args)

    monkeypatch.setattr(dfa, "_successors", stall_once)
    budget = GrammarCompiler(BYTE_VOCAB, limits=Limits(time_budget_s=0.05))
    assert budget.compile_regex(r"(a|b)*a(a|b){7}").stats["dfa_states"] > 64  # passes a budget check
    assert stalled

def test_minimized_dfa_sizes():
    assert COMPILER.compile_regex(r"(a|b)*abb").stats["dfa_states"] == 4
    assert COMPILER.compile_regex(r"(?:aa|aa)*").stats["dfa_states"] == 2
    assert COMPILER.compile_regex(r"[0-9]{2}").stats["dfa_states"] == 3


def test_long_chains_compile_quickly_and_exactly():
    import time

    start = time.process_time()
    compiled = COMPILER.compile_regex(r"a{1500}b?")
    assert time.process_time() - start < 3.0
    m = Matcher(compiled)
    assert m.accept_string("a" * 1499) and not m.is_completed()
    assert m.accept_string("a") and m.is_completed() and m.accept_string("b") and m.is_completed()
