"""Unit checks of request -> constraint translation (no server, no model)."""

from __future__ import annotations

import re

import pytest

from deepinfer.server.constraint_spec import grammar_syntax, regex_for_choices, single_constraint
from deepinfer.server.errors import APIError
from deepinfer.types import ConstraintSpec


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
    assert SlowCompiler.calls == 1  # the second request was refused from memory
