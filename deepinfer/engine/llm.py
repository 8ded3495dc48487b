"""`LLM`: the offline library facade (generate, chat, stream) over one `Engine`.

    from deepinfer import LLM, SamplingParams
    llm = LLM()                                  # default model; LLM(model="dir/or/file.gguf")
    llm = LLM(quantization=None)                 # float weights instead of the GGUF's quantized blocks
    outs = llm.generate(["prompt"], SamplingParams(temperature=0.7, seed=7, json_schema=schema))
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence as Seq

import torch

from deepinfer.engine.engine import Engine, EngineConfig
from deepinfer.engine.output import merge
from deepinfer.errors import UserError
from deepinfer.model import load_model
from deepinfer.model.hub import resolve_model
from deepinfer.model.quant.choice import resolve_quantization
from deepinfer.tokenizer import Tokenizer
from deepinfer.types import RequestOutput, SamplingParams

_DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
           "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}


def parse_dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in _DTYPES:
        raise UserError(f"unknown dtype {dtype!r}; use one of: {', '.join(sorted(_DTYPES))}")
    return _DTYPES[dtype]


def load_engine(model: str | None = None, dtype: str | torch.dtype = "float32", quantization: str | None = "auto",
                **options: Any) -> Engine:
    """Resolve (downloading the default model on first use), load weights and tokenizer, build an Engine.

    quantization (model/quant/choice.py): "auto" runs a GGUF's quantized blocks where the model has
    a GGUF (the default model does), "gguf", "int8", "int4", or None for float weights."""
    path = resolve_model(model)
    weights, quantized = resolve_quantization(path, quantization)
    loaded = load_model(weights, dtype=parse_dtype(dtype), quantization=quantized)
    return Engine(loaded, Tokenizer.from_pretrained(path), EngineConfig(**options))


class LLM:
    """Offline batched generation. Engine options (EngineConfig fields) pass through as keywords."""

    def __init__(self, model: str | None = None, dtype: str | torch.dtype = "float32",
                 quantization: str | None = "auto", **options: Any) -> None:
        self.engine = load_engine(model, dtype, quantization, **options)
        self.tokenizer = self.engine.tokenizer

    @classmethod
    def from_engine(cls, engine: Engine) -> "LLM":
        llm = cls.__new__(cls)
        llm.engine, llm.tokenizer = engine, engine.tokenizer
        return llm

    def generate(self, prompts: str | list[int] | Seq[str | list[int]],
                 params: SamplingParams | Seq[SamplingParams] | None = None) -> list[RequestOutput]:
        """One RequestOutput per prompt (text or token ids), in order."""
        if isinstance(prompts, str) or (isinstance(prompts, list) and prompts and isinstance(prompts[0], int)):
            prompts = [prompts]
        params_list = self._params_list(params, len(prompts))
        ids = [self._submit(p, sp) for p, sp in zip(prompts, params_list)]
        results: dict[str, RequestOutput] = {}
        while any(rid not in results or not results[rid].finished for rid in ids):
            for delta in self.engine.step():
                results[delta.request_id] = merge(results.get(delta.request_id), delta)
        return [results[rid] for rid in ids]

    def chat(self, conversations: list[dict] | Seq[list[dict]],
             params: SamplingParams | Seq[SamplingParams] | None = None, **template_options: Any) -> list[RequestOutput]:
        """Chat replies: each conversation is rendered with the model's chat template."""
        if conversations and isinstance(conversations[0], dict):
            conversations = [conversations]
        prompts = [self.tokenizer.apply_chat_template(c, add_generation_prompt=True, **template_options)
                   for c in conversations]
        return self.generate(prompts, params)

    def stream(self, prompt: str | list[int], params: SamplingParams | None = None) -> Iterator[str]:
        """Text of the first completion as it is produced (stop-string prefixes held back)."""
        for delta in self.stream_outputs(prompt, params):
            for part in delta.outputs:
                if part.index == 0 and part.text:
                    yield part.text

    def stream_outputs(self, prompt: str | list[int],
                       params: SamplingParams | None = None) -> Iterator[RequestOutput]:
        """The request's RequestOutput deltas as steps produce them (`merge` them for the whole
        output). An error of the first completion (a constraint that does not compile, ...) is
        raised as a UserError after its delta; leaving early aborts the request."""
        request_id = self._submit(prompt, params or SamplingParams())
        try:
            while True:
                for delta in self.engine.step():
                    if delta.request_id != request_id:
                        continue
                    yield delta
                    error = next((part.error for part in delta.outputs if part.index == 0 and part.error), None)
                    if error:
                        raise UserError(error)
                    if delta.finished:
                        return
        finally:
            self.engine.abort(request_id)

    def _submit(self, prompt: str | list[int], params: SamplingParams) -> str:
        if isinstance(prompt, str):
            return self.engine.add_request(self.tokenizer.encode(prompt), params, prompt=prompt)
        return self.engine.add_request(list(prompt), params)

    @staticmethod
    def _params_list(params, count: int) -> list[SamplingParams]:
        if params is None or isinstance(params, SamplingParams):
            return [params or SamplingParams()] * count
        if len(params) != count:
            raise UserError(f"got {len(params)} SamplingParams for {count} prompts; give one, or one per prompt")
        return list(params)
