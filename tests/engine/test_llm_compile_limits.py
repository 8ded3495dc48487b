"""An LLM's compile limits are its engine compiler's Limits: a library user sets them on
`llm.engine.compiler.limits` (the memory limit included), and a server built over the same
engine compiles under its own limits without changing them."""

from __future__ import annotations

import dataclasses

from deepinfer import SamplingParams
from deepinfer.constraints import Limits
from deepinfer.constraints import deadline as deadline_module
from deepinfer.server.validation import ConstraintValidator
from deepinfer.types import FinishReason

MIB = 1 << 20


def wide_schema(n: int) -> dict:
    return {"type": "object", "properties": {f"p{i}": {"type": "string", "maxLength": 50} for i in range(n)},
            "required": [f"p{i}" for i in range(n)]}


def test_an_llm_compile_stops_at_its_memory_limit(make_llm, monkeypatch):
    reads = [0]

    def growing() -> int:  # resident memory 1 MiB larger at every read: deterministic on any machine
        reads[0] += 1
        return (1 << 30) + reads[0] * MIB

    monkeypatch.setattr(deadline_module, "_READER", growing)
    llm = make_llm()
    llm.engine.compiler.limits = dataclasses.replace(llm.engine.compiler.limits, max_compile_bytes=20 * MIB)
    out = llm.generate(["x"], SamplingParams(json_schema=wide_schema(3000), max_tokens=8))[0]
    assert out.finish_reason == FinishReason.ERROR
    error = out.outputs[0].error
    assert "memory limit of 20 MiB" in error and "Limits(max_compile_bytes=...)" in error, error


def test_a_server_over_the_llms_engine_leaves_its_limits_alone(make_llm):
    llm = make_llm()
    own = Limits(compile_time_s=120.0)
    llm.engine.compiler.limits = own
    validator = ConstraintValidator(llm.engine.compiler, timeout_s=5.0, workers=1, memory_bytes=64 * MIB)
    assert llm.engine.compiler.limits is own
    assert (validator.compiler.limits.compile_time_s, validator.compiler.limits.max_compile_bytes) == (5.0, 64 * MIB)
    assert validator.compiler.vocab is llm.engine.compiler.vocab
