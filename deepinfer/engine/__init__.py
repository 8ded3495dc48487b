"""The engine: requests, continuous batching scheduler, step loop, LLM facade.

Drives model forward passes over a paged KV cache, applies constraint masks
through the `Matcher` API only, and samples. Knows nothing about HTTP.
"""

from deepinfer.engine.async_engine import AsyncEngine
from deepinfer.engine.engine import Engine, EngineConfig
from deepinfer.engine.llm import LLM, load_engine
from deepinfer.engine.output import merge
from deepinfer.engine.scheduler import Scheduler, SchedulerConfig
from deepinfer.model.hub import resolve_model

__all__ = ["AsyncEngine", "Engine", "EngineConfig", "LLM", "Scheduler", "SchedulerConfig", "load_engine",
           "merge", "resolve_model"]
