"""A compile's time and state limits (Limits.compile_time_s / max_compile_states, deadline.py) hold.

Pathological inputs (a regex whose DFA has 2^21 states, a JSON Schema of thousands of
sub-schemas) compiled with a 0.5 s limit stop within max(10%, 50 ms) of it, with a
ConstraintError naming the limit, the JSON pointer reached and the option that raises it.
The assertion leaves 0.3 s of slack for a loaded machine and prints the overshoot measured.
Differential: a compile well within its limits builds exactly the DFA an unlimited one does.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import textwrap
import time

import pytest

from deepinfer.constraints import ConstraintError, GrammarCompiler, Limits
from deepinfer.server.validation import ConstraintValidator
from deepinfer.types import ConstraintSpec

LIMIT_S = 0.5
SLACK_S = 0.3  # a loaded machine's scheduling; the target is max(10%, 50 ms)
BLOWUP = "(a|b)*a(a|b){20}"  # the 21st byte from the end is `a`: 2^21 DFA states


def _huge_schema(n: int) -> dict:
    """n properties, each an anyOf of an object, an array and another object."""
    props = {}
    for i in range(n):
        props[f"p{i}"] = {"anyOf": [
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]{2,9}[0-9]+$"},
                                              "b": {"type": "integer", "minimum": i}}, "required": ["a"]},
            {"type": "array", "items": {"type": "string", "maxLength": 40}, "minItems": 1},
            {"type": "object", "properties": {"q": {"enum": [f"v{j}" for j in range(i % 17)] or ["z"]},
                                              "r": {"type": "number", "maximum": 1000}}}]}
    return {"type": "object", "properties": props, "required": [f"p{i}" for i in range(0, n, 3)]}


def _timed(fn) -> tuple[float, ConstraintError]:
    started = time.perf_counter()
    with pytest.raises(ConstraintError) as info:
        fn()
    return time.perf_counter() - started, info.value


def _assert_stopped(elapsed: float, limit: float, what: str) -> None:
    print(f"{what}: stopped after {elapsed:.3f} s, limit {limit} s, overshoot {elapsed - limit:+.3f} s")
    assert elapsed < limit + SLACK_S, f"{what} ran {elapsed:.3f} s past a {limit} s limit"


def test_regex_with_exponential_dfa_stops_at_its_time_limit(tiny_vocab):
    compiler = GrammarCompiler(tiny_vocab, limits=Limits(max_dfa_states=10_000_000, time_budget_s=1000,
                                                         compile_time_s=LIMIT_S))
    elapsed, err = _timed(lambda: compiler.compile_regex(BLOWUP))
    _assert_stopped(elapsed, LIMIT_S, "regex")
    text = str(err)
    assert err.limit
    assert "time limit of 0.5 s" in text and "compile_time_s" in text and "building its automaton" in text


def test_huge_schema_stops_at_its_time_limit_naming_the_pointer(tiny_vocab):
    compiler = GrammarCompiler(tiny_vocab, limits=Limits(compile_time_s=LIMIT_S))
    elapsed, err = _timed(lambda: compiler.compile_json_schema(_huge_schema(3000)))
    _assert_stopped(elapsed, LIMIT_S, "schema")
    text = str(err)
    assert text.startswith("JSON Schema compile stopped at its time limit of 0.5 s")
    assert re.search(r"\) at /(properties/p\d+)?", text) and "Limits(compile_time_s=" in text


def test_state_limit_holds(tiny_vocab):
    compiler = GrammarCompiler(tiny_vocab, limits=Limits(max_compile_states=5_000))
    _, err = _timed(lambda: compiler.compile_regex("(a|b)*a(a|b){12}"))  # 2^13 states
    assert "state limit of 5000 automaton states" in str(err) and "max_compile_states" in str(err)
    assert compiler.compile_regex("(a|b)*a(a|b){8}").stats["dfa_states"] == 2 ** 9


def test_limited_compile_builds_the_unlimited_dfa(tiny_vocab):
    limited = GrammarCompiler(tiny_vocab, limits=Limits(compile_time_s=30.0, max_compile_states=10 ** 6))
    plain = GrammarCompiler(tiny_vocab)
    for pattern in ("(a|b)*a(a|b){6}", r"[0-9]{1,4}(\.[0-9]+)?", "(foo|bar)+baz"):
        a, b = limited.compile_regex(pattern).automaton.dfa, plain.compile_regex(pattern).automaton.dfa
        assert a.digest == b.digest
    schema = _huge_schema(4)
    assert str(limited.compile_json_schema(schema).grammar) == str(plain.compile_json_schema(schema).grammar)


def test_server_compile_timeout_is_the_compile_limit(tiny_vocab):
    """ConstraintValidator (what `deepinfer serve --compile-timeout` sets) compiles under its
    timeout, whose refusal names the flag, before the pool gives up on it; the compiler it was
    given (the engine's, an LLM's) keeps its own limits."""
    own = Limits(max_dfa_states=10_000_000, time_budget_s=1000)
    compiler = GrammarCompiler(tiny_vocab, limits=own)
    validator = ConstraintValidator(compiler, timeout_s=LIMIT_S, workers=1, memory_bytes=512 << 20)
    assert compiler.limits is own and compiler.limits.compile_time_s is None
    assert compiler.limits.max_compile_bytes is None
    assert validator.compiler.limits.compile_time_s == LIMIT_S
    assert validator.compiler.limits.max_compile_bytes == 512 << 20
    spec = ConstraintSpec("regex", BLOWUP, "response_format")
    started = time.perf_counter()
    with pytest.raises(Exception) as info:
        asyncio.run(validator.validate(spec))
    elapsed = time.perf_counter() - started
    text = str(getattr(info.value, "message", info.value))
    assert "time limit of 0.5 s" in text and "`deepinfer serve --compile-timeout`" in text, text
    _assert_stopped(elapsed, LIMIT_S, "server regex")


def test_the_server_limits_share_the_compilers_cache(tiny_vocab):
    """The validator's compiler is a view of the one it was given: a constraint admitted by the
    server is a cache hit for the engine's compile, and the other way round."""
    compiler = GrammarCompiler(tiny_vocab)
    validator = ConstraintValidator(compiler, timeout_s=30.0, workers=1)
    asyncio.run(validator.validate(ConstraintSpec("regex", "(foo|bar)+baz", "response_format")))
    assert validator.compiler.compile_regex("(foo|bar)+baz") is compiler.compile_regex("(foo|bar)+baz")
    engine_first = compiler.compile_regex("[0-9]{1,4}")
    assert validator.compiler.compile_regex("[0-9]{1,4}") is engine_first
    assert compiler.limits == Limits()  # unchanged by the validator


def test_first_jsonschema_import_is_bounded_by_the_limit():
    """In a fresh process, a schema whose lowering needs jsonschema (an object enum value checked
    against its schema) waits on that ~1 s import only for the time its limit leaves."""
    code = textwrap.dedent("""
        import sys, time
        from deepinfer.constraints import ConstraintError, GrammarCompiler, Limits, Vocabulary
        vocab = Vocabulary.from_token_bytes([bytes([b]) for b in range(256)])
        compiler = GrammarCompiler(vocab, limits=Limits(compile_time_s=0.2))
        schema = {"enum": [{"a": 1}, {"a": "x"}], "properties": {"a": {"type": "integer"}}}
        assert "jsonschema" not in sys.modules
        t = time.perf_counter()
        try:
            compiler.compile_json_schema(schema)
            print("compiled", time.perf_counter() - t)
        except ConstraintError as exc:
            print("stopped", time.perf_counter() - t, exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    verdict, seconds, *rest = out.stdout.split(maxsplit=2)
    print(out.stdout)
    if verdict == "compiled":  # a fast machine imported it within the limit: nothing to bound
        assert float(seconds) < 0.2 + SLACK_S
        return
    assert float(seconds) < 0.2 + SLACK_S and "importing jsonschema" in rest[0]
