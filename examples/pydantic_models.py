"""Library use with Pydantic models: typed objects straight out of the model.

    python examples/pydantic_models.py [--model DIR_OR_GGUF]

The model comes from --model, else $DEEPINFER_MODEL_DIR, else the default model
(downloaded on first use). Every reply is constrained by the Pydantic model's
JSON Schema, so `model_validate_json` always succeeds on a finished reply.
"""

from __future__ import annotations

import argparse
import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from deepinfer import LLM, SamplingParams


class Contact(BaseModel):
    model_config = ConfigDict(extra="forbid")  # additionalProperties: false, a closed object
    name: str = Field(max_length=24)
    email: str | None = Field(default=None, max_length=32)
    role: Literal["customer", "supplier", "partner"]


class Review(BaseModel):
    model_config = ConfigDict(extra="forbid")
    product: str = Field(max_length=24)
    stars: int = Field(ge=1, le=5)
    sentiment: Literal["positive", "neutral", "negative"]


TEXTS = {
    Contact: "Hi, I'm Dana Reyes (dana@northwind.example), ordering parts for our shop every month.",
    Review: "The Aeropress Go is compact and makes great coffee, though the cap is fiddly. 4/5.",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=os.environ.get("DEEPINFER_MODEL_DIR"))
    parser.add_argument("--max-tokens", type=int, default=200)
    args = parser.parse_args()

    llm = LLM(args.model)
    conversations, params = [], []
    for schema, text in TEXTS.items():
        conversations.append([{"role": "system", "content": f"Extract a {schema.__name__} as JSON."},
                              {"role": "user", "content": text}])
        params.append(SamplingParams(json_schema=schema.model_json_schema(), temperature=0,
                                     max_tokens=args.max_tokens, json_whitespace="compact"))
    for schema, out in zip(TEXTS, llm.chat(conversations, params)):  # one batch, one schema each
        if out.finish_reason == "error":
            print(f"{schema.__name__}: error: {out.outputs[0].error}")
            continue
        if out.finish_reason != "stop":
            print(f"{schema.__name__}: unfinished ({out.finish_reason.value}); raise --max-tokens")
            continue
        obj = schema.model_validate_json(out.text)
        print(f"{schema.__name__}: {obj!r}")


if __name__ == "__main__":
    main()
