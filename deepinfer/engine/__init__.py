"""The engine: requests in, tokens and text out, many requests batched per step.

Owns requests and their sequences, the continuous-batching scheduler, the step loop
(schedule, prepare, forward, mask, sample, advance, deltas), constraint compiles off the
loop (`constraints.py`), stop strings and streamed deltas (`output.py`), speculative
decoding and jump-forward (`speculation/`), batch invariance (`invariance.py`), and the
library facades `LLM` and `AsyncEngine`. Must not know HTTP or the server, how constraints
are compiled or matched inside (the constraints package's public API only, and the Matcher
only through `guided.py`), the model's layers (only `forward` and its config) or how the KV
cache lays out memory (the kvcache API only).
"""

from deepinfer.engine.async_engine import AsyncEngine
from deepinfer.engine.engine import Engine, EngineConfig
from deepinfer.engine.llm import LLM, load_engine
from deepinfer.engine.output import merge
from deepinfer.engine.scheduler import Scheduler, SchedulerConfig
from deepinfer.model.hub import resolve_model

__all__ = ["AsyncEngine", "Engine", "EngineConfig", "LLM", "Scheduler", "SchedulerConfig", "load_engine",
           "merge", "resolve_model"]
