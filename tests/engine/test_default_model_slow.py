"""Slow checks on the real default model (SmolLM2-135M-Instruct, float32): the needle test among
random batches, and JSON-Schema extraction whose outputs validate."""

import json
import random

import jsonschema
import pytest

from deepinfer import SamplingParams
from deepinfer.engine import Engine, EngineConfig, LLM
from deepinfer.testing import default_model_dir_or_skip

pytestmark = pytest.mark.slow

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 30},
                                           "age": {"type": "integer"}}, "required": ["name", "age"],
          "additionalProperties": False}


@pytest.fixture(scope="module")
def smol():
    from deepinfer.model import load_model
    from deepinfer.tokenizer import Tokenizer

    path = default_model_dir_or_skip()
    return load_model(path), Tokenizer.from_pretrained(path)


def test_needle_on_the_default_model(smol):
    model, tok = smol
    needle = tok.apply_chat_template([{"role": "user", "content": "Tell me about Richard Feynman."}])
    params = SamplingParams(temperature=0.8, seed=11, max_tokens=32, ignore_eos=True)

    def run(others, **options):
        llm = LLM.from_engine(Engine(model, tok, EngineConfig(batch_invariant=True, **options)))
        rng = random.Random(others)
        prompts = [f"Question {i}: " + " ".join(rng.choice(["why", "sky", "blue", "cats"]) for _ in range(rng.randint(1, 30)))
                   for i in range(others)]
        prompts.insert(others // 2, needle)
        ps = [SamplingParams(temperature=1.0, seed=i, max_tokens=rng.randint(1, 40), ignore_eos=True)
              for i in range(others)]
        ps.insert(others // 2, params)
        return llm.generate(prompts, ps)[others // 2].token_ids

    alone = run(0)
    assert run(7, max_num_batched_tokens=64) == alone
    assert run(32) == alone


def test_json_extraction_validates(smol):
    model, tok = smol
    llm = LLM.from_engine(Engine(model, tok, EngineConfig()))
    prompts = [tok.apply_chat_template([{"role": "user", "content": f"Person {n}, aged {a}. Give JSON."}])
               for n, a in [("Ada", 36), ("Alan", 41), ("Grace", 85), ("Linus", 54)]]
    outs = llm.generate(prompts, SamplingParams(json_schema=SCHEMA, temperature=0.7, seed=1, max_tokens=60))
    for out in outs:
        assert out.finish_reason.value == "stop", out.outputs[0]
        jsonschema.validate(json.loads(out.text), SCHEMA)


def test_jump_forward_keeps_the_extraction_outputs(smol):
    """On a real model, forced keys are written with the tokenizer's encoding: same tokens as without."""
    model, tokenizer = smol
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 24},
                                               "city": {"type": "string", "maxLength": 24},
                                               "skills": {"type": "array", "items": {"type": "string", "maxLength": 24},
                                                          "maxItems": 3}},
              "required": ["name", "city", "skills"], "additionalProperties": False}
    prompts = [tokenizer.apply_chat_template([{"role": "user", "content": f"{who} Extract name, city and skills as JSON."}])
               for who in ("Ada Lovelace lives in London and writes poetry.",
                           "Hedy Lamarr, an actress and inventor from Vienna, works on frequency hopping.")]
    params = SamplingParams(json_schema=schema, temperature=0, max_tokens=90)
    outs = {}
    for jump in (False, True):
        llm = LLM.from_engine(Engine(model, tokenizer, EngineConfig(jump_forward=jump, batch_invariant=True)))
        outs[jump] = llm.generate(prompts, params)
        assert (llm.engine.stats()["jump_forward_tokens"] > 0) == jump
    for a, b in zip(outs[False], outs[True]):
        assert (a.text, a.token_ids) == (b.text, b.token_ids)
        jsonschema.validate(json.loads(b.text), schema)
