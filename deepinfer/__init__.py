"""deepinfer: an inference engine for structured generation.

Constrained decoding (regex, JSON Schema, EBNF) over real transformer models,
with deterministic seeded sampling. See README.md for the quickstart.
"""

__version__ = "0.1.0"
