"""deepinfer: an inference engine for structured generation.

Constrained decoding (regex, JSON Schema, EBNF) over real transformer models,
with deterministic seeded sampling. See README.md for the quickstart.
"""

import os

__version__ = "0.1.0"

# NOTE: OpenMP threads that spin while waiting make torch ~10x slower on a shared
# or oversubscribed CPU (measured on 2 cores at load 7); wait passively unless the
# user chose otherwise. Only effective when deepinfer is imported before torch.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__all__ = ["LLM", "SamplingParams", "__version__"]


def __getattr__(name):  # imported on first use: `import deepinfer.constraints` must not pull in torch
    if name == "LLM":
        from deepinfer.engine.llm import LLM
        return LLM
    if name == "SamplingParams":
        from deepinfer.types import SamplingParams
        return SamplingParams
    raise AttributeError(f"module 'deepinfer' has no attribute {name!r}")
