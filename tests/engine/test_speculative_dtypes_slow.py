"""Speculation leaves outputs unchanged in every dtype, on the real default model (SmolLM2-135M):
greedy and seeded, JSON-Schema constrained and free, 12 requests in one batch, speculation off
against the default (scheduled) and against every draft verified (fixed).

- quantized weights (the GGUF's Q4_1 blocks), float32 and bfloat16 activations, batch-invariant
  mode off: the kernels compute each row alike whatever the batch, and drafts never change how a
  step's known tokens are split (scheduler.py), so outputs are equal without the invariant mode;
- float weights, float32 and bfloat16: with the batch-invariant mode (float GEMMs round a row
  differently by batch size).
"""

import json
import sys
from pathlib import Path

import jsonschema
import pytest

from deepinfer import LLM, SamplingParams
from deepinfer.engine.speculation.settings import SpeculativeConfig
from deepinfer.testing import default_model_dir_or_skip

pytestmark = pytest.mark.slow

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from engine_common import EXTRACTION_SCHEMA, extraction_prompt  # noqa: E402

CHAT = ["Name three rivers in Europe and say where each one starts.",
        "Write a Python function that reverses a linked list.",
        "Why do cats purr?", "List the planets of the solar system in order."]


def requests(tokenizer):
    prompts = [tokenizer.apply_chat_template(extraction_prompt(i)) for i in range(8)]
    prompts += [tokenizer.apply_chat_template([{"role": "user", "content": c}]) for c in CHAT]
    params = [SamplingParams(json_schema=EXTRACTION_SCHEMA, temperature=0, max_tokens=80)] * 5
    params += [SamplingParams(json_schema=EXTRACTION_SCHEMA, temperature=0.7, seed=i, max_tokens=80)
               for i in range(3)]
    params += [SamplingParams(temperature=0, max_tokens=48), SamplingParams(temperature=0, max_tokens=48),
               SamplingParams(temperature=0.8, seed=5, max_tokens=48),
               SamplingParams(temperature=0.9, top_p=0.9, seed=6, max_tokens=48)]
    return prompts, params


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("quantization, batch_invariant", [("auto", False), (None, True)],
                         ids=["quantized", "float-weights-invariant"])
def test_outputs_equal_speculation_off(dtype, quantization, batch_invariant):
    path = str(default_model_dir_or_skip(allow_download=True))
    llm = LLM(path, dtype=dtype, quantization=quantization, batch_invariant=batch_invariant)
    prompts, params = requests(llm.tokenizer)
    engine = llm.engine
    runs = {}
    for name, config in [("off", None), ("scheduled", SpeculativeConfig()),
                         ("fixed", SpeculativeConfig(measured_cost=False, prior_overhead_rows=1e9, max_rest=0))]:
        engine.config.speculative = config is not None
        if config is not None:
            engine.config.speculative_config = config
        engine.reset_speculator()
        engine.blocks.clear_cache()
        runs[name] = [(o.token_ids, o.text) for o in llm.generate(prompts, params)]
        if name == "fixed":
            stats = engine.stats()
            assert stats["verified_tokens"] > stats["accepted_tokens"] > 0
    for name in ("scheduled", "fixed"):
        for i, (plain, drafted) in enumerate(zip(runs["off"], runs[name])):
            assert drafted == plain, f"{name}: request {i} differs from speculation off"
    for token_ids, text in runs["off"][:8]:
        jsonschema.validate(json.loads(text), EXTRACTION_SCHEMA)
