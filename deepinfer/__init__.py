"""deepinfer: an inference engine for structured generation.

Constrained decoding (regex, JSON Schema, EBNF) over real transformer models,
with deterministic seeded sampling. See README.md for the quickstart.
"""

from deepinfer import envs

__version__ = "0.1.0"

envs.default_omp_wait_policy()  # before anything imports torch

__all__ = ["LLM", "SamplingParams", "__version__"]


def __getattr__(name):  # imported on first use: `import deepinfer.constraints` must not pull in torch
    if name == "LLM":
        from deepinfer.engine.llm import LLM
        return LLM
    if name == "SamplingParams":
        from deepinfer.types import SamplingParams
        return SamplingParams
    raise AttributeError(f"module 'deepinfer' has no attribute {name!r}")
