"""Compile a request's constraint at admission, before any byte of the response.

A constraint that cannot be compiled or enforced is a 400 carrying the
compiler's message (keyword + JSON pointer, or grammar line/column), prefixed
with the request field it came from. The metaschema check and the compile run
in the compile pool's threads (compile_pool.py), so a slow or large schema never
blocks the event loop nor holds another request's slot past its timeout; the
compiler caches results, so the engine's own compile of the same constraint is
a cache hit when both share one compiler.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import time
from collections import OrderedDict
from typing import Any, Callable

import jsonschema

from deepinfer.constraints import GrammarCompiler, needed_tokens
from deepinfer.errors import UserError
from deepinfer.memory import forget_frames
from deepinfer.server.compile_pool import CompilePool, CompileTimeout
from deepinfer.server.config import DEFAULT_COMPILE_MEMORY_BYTES
from deepinfer.server.errors import APIError, bad_request
from deepinfer.types import ConstraintSpec


def check_schema(spec: ConstraintSpec) -> None:
    """A JSON Schema must itself be valid (against its draft's metaschema) before we compile it:
    a compiler may skip a keyword whose value is malformed, and that must not pass as enforced."""
    if spec.kind != "json_schema" or isinstance(spec.value, bool):
        return
    cls = jsonschema.validators.validator_for(spec.value, default=jsonschema.Draft202012Validator)
    error = jsonschema.exceptions.best_match(cls(cls.META_SCHEMA).iter_errors(spec.value))
    if error is not None:
        pointer = "/" + "/".join(str(p) for p in error.absolute_path)
        raise bad_request(f"'{spec.source}': not a valid JSON Schema at {pointer}: {error.message}",
                          param=spec.source, code="invalid_schema")


def compile_spec(compiler: Any, spec: ConstraintSpec, json_whitespace: str | None = None) -> Any:
    """Compile one constraint with the project's GrammarCompiler (raises ConstraintError)."""
    if spec.kind == "json_schema":
        # Exactly what the engine compiles (same options, so the same cache entry). The compiler
        # is strict already (a keyword it cannot enforce is an error), so OpenAI's `strict`
        # asks for nothing more.
        options = {} if json_whitespace is None else {"whitespace": json_whitespace}
        return compiler.compile_json_schema(spec.value, **options)
    if spec.kind == "regex":
        return compiler.compile_regex(spec.value)
    if spec.kind == "ir":  # composed by deepinfer.constraints.compose
        return compiler.compile_ir(spec.value)
    return compiler.compile_grammar(spec.value, syntax=spec.syntax)


def refusal_key(spec: ConstraintSpec) -> str:
    """A digest of the constraint's value as text (JSON, or a composed grammar as its printed
    rules): the refusal memory keeps 256 of them, and a refused schema can be megabytes."""
    text = str(spec.value) if spec.kind == "ir" else json.dumps(spec.value, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def admission_compiler(compiler: Any, timeout_s: float, memory_bytes: int | None) -> Any:
    """The compiler admission compiles run on. For a GrammarCompiler, a view of it (with_limits:
    the same vocabulary and cache, so the engine's compile of an admitted constraint is a cache
    hit) whose Limits stop a compile at the server's timeout and memory limit (deadline.py),
    with a message naming the sub-schema reached and the flag, before the pool gives up on it
    and lets its thread run on. The given compiler's own limits stay as they were: it is the
    engine's, and a library user's LLM over that engine keeps its limits. Any other compiler
    (a wrapper, a test double) is used as given: its compiles get no limits of the server's."""
    if not isinstance(compiler, GrammarCompiler):
        return compiler
    return compiler.with_limits(dataclasses.replace(
        compiler.limits, compile_time_s=timeout_s, limit_option="`deepinfer serve --compile-timeout`",
        max_compile_bytes=memory_bytes, memory_option="`deepinfer serve --compile-memory`"))


class ConstraintValidator:
    """Checks and compiles constraints off the event loop (compile_pool.py) and reports compile time."""

    def __init__(self, compiler: Any, on_compiled: Callable[[float, bool], None] | None = None,
                 json_whitespace: str | None = None, timeout_s: float = 60.0, workers: int = 4,
                 memory_bytes: int | None = DEFAULT_COMPILE_MEMORY_BYTES) -> None:
        self.compiler = admission_compiler(compiler, timeout_s, memory_bytes)
        self.json_whitespace = json_whitespace
        self.on_compiled = on_compiled
        self.timeout_s = timeout_s
        self.pool = CompilePool(workers)
        # Refused constraints, so that a client retrying a bad schema costs no second compile.
        self._refused: OrderedDict[tuple, str] = OrderedDict()

    async def validate(self, spec: ConstraintSpec | None, max_tokens: int | None = None) -> None:
        """Refuse (400) a constraint that does not compile, or whose shortest complete output found
        does not fit `max_tokens` (None: not checked)."""
        if spec is None:
            return
        if self.compiler is None:
            raise bad_request(f"'{spec.source}': this server has no constraint compiler, so the "
                              "constraint cannot be enforced", param=spec.source, code="constraint_unsupported")
        # Printing a large schema or grammar is work too: off the loop like the compile.
        key = (spec.kind, spec.syntax, await asyncio.to_thread(refusal_key, spec))
        refused, need = self._refused.get(key), None
        if refused is None:
            refused, need = await self._compile(key, spec)
        if refused is not None:
            self._remember(key, refused)
            raise bad_request(f"'{spec.source}': {refused}", param=spec.source, code="invalid_constraint")
        if max_tokens is not None and need is not None and need > max_tokens:
            # not remembered among the refusals: another request may give it more tokens
            raise bad_request(f"'max_tokens': max_tokens {max_tokens} cannot hold a complete output of this "
                              f"constraint: the shortest one found takes {need} tokens; raise max_tokens to "
                              f"at least {need}", param="max_tokens", code="invalid_request_parameter")

    def _check_and_compile(self, spec: ConstraintSpec) -> int | None:
        """The tokens a complete output needs (constraints.needed_tokens), in the compile thread."""
        check_schema(spec)
        return needed_tokens(compile_spec(self.compiler, spec, self.json_whitespace))

    async def _compile(self, key: tuple, spec: ConstraintSpec) -> tuple[str | None, int | None]:
        """(None, the tokens a complete output needs) if the constraint compiles, else (the reason
        it does not, None)."""
        start = time.perf_counter()
        problem, need = None, None
        try:
            # the compiler stops itself at timeout_s (its Limits); the pool's own timeout is the
            # backstop for a compile that cannot (the limit's promise: within 10% or 50 ms)
            need = await self.pool.run(key, lambda: self._check_and_compile(spec), 1.1 * self.timeout_s + 0.05)
        except CompileTimeout:
            problem = (f"the {spec.kind.replace('_', ' ')} did not compile within {self.timeout_s:g} s; "
                       "simplify it (fewer alternatives, smaller bounded repetitions)")
        except APIError:  # the schema is not valid against its metaschema: already a 400
            raise
        except (UserError, ValueError, TypeError, RecursionError) as exc:
            # UserError (ConstraintError and friends): the user's constraint is at fault
            problem = str(exc) if isinstance(exc, UserError) else \
                f"cannot compile this {spec.kind.replace('_', ' ')}: {exc}"
            forget_frames(exc)  # the pool's frames hold the request (schema included): a cycle
        finally:
            if self.on_compiled is not None:
                self.on_compiled(time.perf_counter() - start, problem is None)
        return problem, need

    def _remember(self, key: tuple, problem: str) -> None:
        self._refused[key] = problem
        self._refused.move_to_end(key)
        while len(self._refused) > 256:
            self._refused.popitem(last=False)
