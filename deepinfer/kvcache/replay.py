"""Sliding-window replay: where to start recomputing when a cache does not hold the window KV.

A sequence restored at `restored` tokens (a prefix-cache hit, or a preempted sequence coming
back) needs every layer's sliding-window rows for the positions just before it. When the cache
keeps only what outlives the window (compressed entries, or nothing), those rows are rebuilt by
recomputing the last tokens before `restored` through all layers, on top of whatever state the
cache still holds; earlier positions are never attended again.

- "exact": far enough that every kept row equals a cold run's. The first layer's output at
  position p reads positions (p - window, p], the next layer's reads those outputs, so the
  state at `restored` depends on sum over layers of (window - 1) tokens back; a compressed
  branch of layer i that still pools rows from position q needs the layer's input exact there,
  i.e. the windows of the layers before i back from q. Rows computed from the truncated history before that are
  never read by the restored sequence.
- "bounded": `tokens` back (at least back to the compressed branches' partial windows, which
  must be recomputed): later tokens see a window rebuilt from a shortened history, the
  approximation DeepSeek-V4.1 makes with a 140-token suffix.
"""

from __future__ import annotations

from dataclasses import dataclass

from deepinfer.errors import UserError

MODES = ("bounded", "exact")
DEFAULT_TOKENS = 140


@dataclass(frozen=True)
class ReplayPolicy:
    mode: str = "bounded"
    tokens: int = DEFAULT_TOKENS

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise UserError(f"swa_replay must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.tokens < 0:
            raise UserError(f"swa_replay_tokens must be >= 0, got {self.tokens}")

    def start(self, restored: int, windows: tuple[int, ...], needs: list[tuple[int, int]] = ()) -> int:
        """First position to recompute for a sequence restored at `restored` tokens.

        windows: each layer's sliding window (tokens a position attends, itself included);
        needs: (layer index, first position whose layer input a compressed branch still reads)."""
        if self.mode == "exact":
            before = [0]  # tokens the layers before layer i reach back, layer by layer
            for window in windows:
                before.append(before[-1] + window - 1)
            first = min([restored - before[-1]] + [q - before[layer] for layer, q in needs])
        else:
            first = min([restored - self.tokens] + [q for _, q in needs])
        return max(0, min(first, restored))
