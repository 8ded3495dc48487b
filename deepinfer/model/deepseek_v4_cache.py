"""Per-sequence decode state of a DeepSeek-V4 model, dense, and the packed batch a forward pass takes.

V4 attention cannot go through the generic `KVCache.attend` protocol: besides the
sliding-window keys, CSA/HCA layers attend compressed entries that are built from whole
windows of tokens, so a sequence's state also holds the compressed entries emitted so far
and the per-token projections of the window still being filled. This module owns that
state and its bookkeeping (append, trim, rollback); the math that fills it lives in
deepseek_v4_compressor.py and deepseek_v4_attention.py.

State layout of one sequence of `num_tokens` tokens, per layer (D = head_dim,
Di = index_head_dim, r = the layer's compress rate; tensors in the model dtype):

  every layer    window.kv        [n_w, D]   K=V of positions [num_tokens - n_w, num_tokens),
                                             n_w <= sliding_window - 1 (+ rollback margin)
  HCA layer      compressor       entries [num_tokens // r, D]: entry w pools positions [w r, w r + r)
                                  pending_kv / pending_gate [n_p, D]: projections of positions
                                  [pending_start, num_tokens), pending_start = a multiple of r
  CSA layer      compressor       like HCA at width 2D: channels [:D] of window w-1 and [D:] of
                                  window w pool into entry w, so pending also keeps the last
                                  complete window
                 indexer          the same at index width: entries [num_tokens // r, Di],
                                  pending [n_p, 2 Di] (the Lightning Indexer's keys)

`truncate(length)` rolls a sequence back cheaply for any length >= `min_length`, which
trails `num_tokens` by the `max_rollback` margin the cache was made with: enough window
rows and pending projections are kept to rebuild the state of any such length.
Compressed entries are never dropped except by `truncate`.

`StateLayout` describes that state in plain numbers (per layer: the window's width, each
compressed branch's rate, overlap and widths) for storage that lives outside the model: the
engine's paged hybrid cache keeps the same rows in pages and hands the model, per forward
pass, a batch whose segments' `cache` offers the same per-layer interface (`layers[i].window`
with `extend`; `.compressor` / `.indexer` with `num_entries`, `append`, `pending_end`,
`windows`, `add_entries`, `entries`) and the same `layout`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from deepinfer.model.deepseek_v4_config import CSA, SLIDING, DeepseekV4Config


@dataclass(frozen=True)
class BranchLayout:
    """A compressed branch: one entry of `entry_dim` every `rate` tokens, pooled from per-token
    projections (kv and gate) of `width` channels each."""

    rate: int
    overlap: bool  # CSA: entry w also pools window w-1 (width 2 * entry_dim)
    entry_dim: int

    @property
    def width(self) -> int:
        return 2 * self.entry_dim if self.overlap else self.entry_dim

    def needed_from(self, length: int) -> int:
        """First position whose projections the entry after `length` tokens still needs."""
        complete = length // self.rate
        return max(0, (complete - 1 if self.overlap else complete) * self.rate)


@dataclass(frozen=True)
class LayerLayout:
    window_dim: int  # K=V width of the sliding window
    compressor: BranchLayout | None  # CSA and HCA layers
    indexer: BranchLayout | None  # CSA layers: the Lightning Indexer's keys

    def branches(self) -> tuple[BranchLayout, ...]:
        return tuple(b for b in (self.compressor, self.indexer) if b is not None)


@dataclass(frozen=True)
class StateLayout:
    """What a sequence's V4 decode state holds per layer; every layer attends `sliding_window` tokens."""

    sliding_window: int
    layers: tuple[LayerLayout, ...]


def state_layout(config: DeepseekV4Config) -> StateLayout:
    layers = []
    for kind, rate in zip(config.layer_types, config.compress_rates):
        compressor = None if kind == SLIDING else BranchLayout(rate, kind == CSA, config.head_dim)
        indexer = BranchLayout(rate, True, config.index_head_dim) if kind == CSA else None
        layers.append(LayerLayout(config.head_dim, compressor, indexer))
    return StateLayout(config.sliding_window, tuple(layers))


@dataclass
class WindowKV:
    """Sliding-window K=V of one layer: rows for positions [end - len(kv), end)."""

    kv: torch.Tensor  # [n_w, head_dim]

    def extend(self, new: torch.Tensor) -> torch.Tensor:
        """Append new rows [n, D]; returns every kept row [n_w + n, D]."""
        # (a copy either way: a view would keep the whole packed batch's tensor alive)
        self.kv = torch.cat([self.kv, new]) if self.kv.shape[0] else new.clone()
        return self.kv

    def keep_from(self, first: int, end: int) -> None:
        """Drop rows of positions < first (rows end at position `end`)."""
        start = end - self.kv.shape[0]
        if first > start:
            self.kv = self.kv[first - start:]


@dataclass
class CompressorState:
    """One compressor branch of one layer: its compressed entries and its unpooled tail."""

    rate: int
    overlap: bool  # CSA: entry w also pools window w-1, so the last complete window stays pending
    entries: torch.Tensor  # [E, dim], entry w for window w
    pending_kv: torch.Tensor  # [n_p, width], positions [pending_start, pending_start + n_p)
    pending_gate: torch.Tensor  # [n_p, width], gate logits before the position bias
    pending_start: int = 0

    @property
    def num_entries(self) -> int:
        return self.entries.shape[0]

    @property
    def pending_end(self) -> int:
        return self.pending_start + self.pending_kv.shape[0]

    def append(self, kv: torch.Tensor, gate: torch.Tensor) -> None:
        """Projections [n, width] of the next n tokens."""
        self.pending_kv = torch.cat([self.pending_kv, kv]) if self.pending_kv.shape[0] else kv.clone()
        self.pending_gate = torch.cat([self.pending_gate, gate]) if self.pending_gate.shape[0] else gate.clone()

    def windows(self, first: int, count: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Pending projections of windows first..first+count-1: kv, gate [count, rate, width]."""
        lo = first * self.rate - self.pending_start
        if lo < 0 or (first + count) * self.rate > self.pending_end:
            raise ValueError(f"windows {first}..{first + count - 1} are not pending "
                             f"(pending positions {self.pending_start}..{self.pending_end - 1})")
        hi = lo + count * self.rate
        width = self.pending_kv.shape[1]
        return (self.pending_kv[lo:hi].view(count, self.rate, width),
                self.pending_gate[lo:hi].view(count, self.rate, width))

    def add_entries(self, new: torch.Tensor) -> None:
        self.entries = torch.cat([self.entries, new]) if self.num_entries else new

    def needed_from(self, length: int) -> int:
        """First position whose projections the entry after `length` tokens still needs."""
        complete = length // self.rate
        return max(0, (complete - 1 if self.overlap else complete) * self.rate)

    def keep_from(self, first: int) -> None:
        first = first // self.rate * self.rate  # pending always starts on a window boundary
        if first > self.pending_start:
            cut = min(first, self.pending_end) - self.pending_start
            self.pending_kv, self.pending_gate = self.pending_kv[cut:], self.pending_gate[cut:]
            self.pending_start += cut

    def truncate(self, length: int) -> None:
        self.entries = self.entries[:length // self.rate]
        keep = max(0, length - self.pending_start)
        self.pending_kv, self.pending_gate = self.pending_kv[:keep], self.pending_gate[:keep]


@dataclass
class LayerState:
    window: WindowKV
    compressor: CompressorState | None = None  # CSA and HCA layers
    indexer: CompressorState | None = None  # CSA layers

    def branches(self) -> list[CompressorState]:
        return [b for b in (self.compressor, self.indexer) if b is not None]


@dataclass
class DeepseekV4Cache:
    """The dense decode state of one sequence (layout in the module docstring).

    The model appends to it during a forward pass and calls `advance` at the end;
    positions of a sequence's new tokens must continue at `num_tokens`.
    """

    config: DeepseekV4Config
    dtype: torch.dtype
    device: torch.device
    max_rollback: int = 0
    num_tokens: int = 0
    min_length: int = 0  # the shortest length `truncate` can restore
    layers: list[LayerState] = field(default_factory=list)
    layout: StateLayout = field(init=False)

    def __post_init__(self) -> None:
        if self.max_rollback < 0:
            raise ValueError(f"max_rollback must be >= 0, got {self.max_rollback}")
        self.layout = state_layout(self.config)
        self.layers = [self._new_layer(i) for i in range(self.config.num_layers)]

    def _empty(self, width: int) -> torch.Tensor:
        return torch.empty(0, width, dtype=self.dtype, device=self.device)

    def _branch(self, branch: BranchLayout | None) -> CompressorState | None:
        if branch is None:
            return None
        return CompressorState(branch.rate, branch.overlap, self._empty(branch.entry_dim),
                               self._empty(branch.width), self._empty(branch.width))

    def _new_layer(self, layer: int) -> LayerState:
        shape = self.layout.layers[layer]
        return LayerState(WindowKV(self._empty(shape.window_dim)), self._branch(shape.compressor),
                          self._branch(shape.indexer))

    def advance(self, num_new: int) -> None:
        """Count the tokens of a finished forward pass and drop state no rollback can need."""
        self.num_tokens += num_new
        self.min_length = max(self.min_length, self.num_tokens - self.max_rollback)
        window_from = max(0, self.min_length - (self.config.sliding_window - 1))
        for layer in self.layers:
            layer.window.keep_from(window_from, self.num_tokens)
            for branch in layer.branches():
                branch.keep_from(branch.needed_from(self.min_length))

    def truncate(self, length: int) -> None:
        """Forget every token at position >= length (rollback, e.g. of rejected draft tokens)."""
        if not self.min_length <= length <= self.num_tokens:
            raise ValueError(f"cannot roll this sequence back to {length} tokens: it has {self.num_tokens} "
                             f"and keeps state back to {self.min_length} (max_rollback={self.max_rollback})")
        for layer in self.layers:
            kept = layer.window.kv.shape[0] - (self.num_tokens - length)
            layer.window.kv = layer.window.kv[:max(0, kept)]
            for branch in layer.branches():
                branch.truncate(length)
        self.num_tokens = length


@dataclass
class Segment:
    """One sequence's run of tokens in a packed forward pass: rows [start, start + num_new)."""

    cache: DeepseekV4Cache
    start: int
    num_new: int

    @property
    def past(self) -> int:
        """Tokens cached before this forward pass (the position of the run's first token)."""
        return self.cache.num_tokens


class DeepseekV4Batch:
    """What `DeepseekV4Model.forward` takes as its cache: consecutive runs of tokens, one per sequence.

    parts: (cache of the sequence, number of its new tokens) in packed order.
    """

    def __init__(self, parts: list[tuple[DeepseekV4Cache, int]]) -> None:
        self.segments: list[Segment] = []
        start = 0
        for cache, num_new in parts:
            if not isinstance(cache, DeepseekV4Cache):
                raise TypeError(f"a DeepseekV4Batch takes DeepseekV4Cache objects, got {type(cache).__name__}")
            if num_new <= 0:
                raise ValueError(f"every sequence of a batch needs at least one new token, got {num_new}")
            if any(s.cache is cache for s in self.segments):
                raise ValueError("the same sequence cache appears twice in one batch")
            self.segments.append(Segment(cache, start, num_new))
            start += num_new
        self.num_tokens = start

    def commit(self) -> None:
        for segment in self.segments:
            segment.cache.advance(segment.num_new)
