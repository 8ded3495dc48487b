"""Timing the model's forward pass per batch shape on this machine: what speculation's cost model
(speculation/step_cost.py) probes before it verifies rows at a shape it has not seen.

A probe runs one synthetic sequence of B new tokens after `CONTEXT` cached ones through the
engine's own forward path (its KV storage and arithmetic mode), every row projected to logits and
argmaxed, as a decode step with B verified rows would be: once untimed (kernels are built per
shape on first use), then `REPEATS` times, keeping the least CPU time. The KV blocks it writes are
borrowed from the free ones and returned unregistered, so the prefix cache never sees them; when
too few are free the probe declines (None) and the cost model interpolates.

Curves are kept per engine and arithmetic mode (batch-invariant or not, torch threads): a
speculator rebuilt for a benchmark run reuses what was probed. Models that keep their own decode
state (DeepSeek-V4's hybrid cache) are not probed: the cost model then keeps its prior.
"""

from __future__ import annotations

import time
import weakref

import torch

from deepinfer.engine.speculation.step_cost import ForwardCurve

CONTEXT = 64       # cached tokens before the probed rows: attention over a typical short context
REPEATS = 2

_curves: "weakref.WeakKeyDictionary[object, dict[tuple, ForwardCurve]]" = weakref.WeakKeyDictionary()


def forward_curve(engine) -> ForwardCurve | None:
    """The engine's probed forward times for its current arithmetic mode (None: not probeable)."""
    if hasattr(engine.model, "state_layout"):
        return None
    mode = (engine.config.batch_invariant, engine.config.linear_tile, torch.get_num_threads())
    curves = _curves.setdefault(engine, {})
    if mode not in curves:
        curves[mode] = ForwardCurve(lambda tokens: time_forward(engine, tokens),
                                    engine.config.max_num_batched_tokens)
    return curves[mode]


def time_forward(engine, tokens: int) -> float | None:
    """CPU seconds of one forward pass of `tokens` rows with logits (None: no free KV blocks)."""
    blocks = engine.blocks
    table = blocks.new_table()
    if tokens < 1 or not blocks.grow(table, CONTEXT + tokens):
        blocks.free(table)
        return None
    try:
        vocab = engine.model_config.vocab_size
        ids = (torch.arange(tokens, dtype=torch.long) * 7919 + 11) % vocab   # arbitrary, spread ids
        positions = torch.arange(CONTEXT, CONTEXT + tokens, dtype=torch.long)
        rows = torch.arange(tokens, dtype=torch.long)
        best = float("inf")
        for attempt in range(REPEATS + 1):
            cache = engine.kv.forward_cache([(table, CONTEXT, tokens)], engine.config.batch_invariant)
            start = time.process_time()
            try:
                logits = engine._forward(ids, positions, cache, rows)
            except Exception:  # noqa: BLE001 - a model that faults on these ids: no timing at this size
                return None    # (a probe is no request: it must not fail the step that asked for it)
            logits.argmax(dim=1)
            if attempt:
                best = min(best, time.process_time() - start)
        return best
    finally:
        blocks.free(table)
