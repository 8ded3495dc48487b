"""Continuous batching: which sequences run this step, and with how many tokens.

Running sequences go first (decodes, then unfinished prefill chunks), then
waiting ones are admitted in arrival order while the per-step token budget and
KV blocks last; a waiting sequence whose next prompt block another sequence computes in
this very step waits one step and reads it from the prefix cache instead. With chunked prefill a long prompt is split across steps and
mixed with other sequences' decodes. When blocks run out, the most recently
admitted running sequence is preempted: its blocks are freed and it is
recomputed later (its full blocks usually come back from the prefix cache).
A fault while one sequence is scheduled (its blocks grown, its prefix matched) takes that sequence
out of the queues and reports it (`take_faults`): the engine fails its request alone, and the
others are scheduled as if it had never been there.
Knows nothing about the model, sampling or constraints.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from deepinfer.engine.sequence import Sequence
from deepinfer.kvcache import BlockManager
from deepinfer.types import RequestStatus


@dataclass
class SchedulerConfig:
    max_num_batched_tokens: int = 512   # tokens per forward pass
    max_num_seqs: int = 64
    chunked_prefill: bool = True


@dataclass
class ScheduledSeq:
    seq: Sequence
    num_new: int                        # tokens to compute this step, from seq.num_computed
    num_draft: int = 0                  # of which draft tokens to verify (after all known tokens)

    @property
    def samples(self) -> bool:
        """This step computes the sequence's last known token, so it yields logits."""
        return self.seq.num_computed + self.num_new - self.num_draft == self.seq.num_tokens


class Scheduler:
    def __init__(self, blocks: BlockManager, config: SchedulerConfig) -> None:
        self.blocks = blocks
        self.config = config
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.num_preemptions = 0
        self.faults: list[tuple[Sequence, Exception]] = []   # (sequence, what scheduling it raised)

    def add(self, seq: Sequence) -> None:
        seq.status = RequestStatus.WAITING
        seq.table = self.blocks.new_table()  # the storage's kind of table (hybrid caches have their own)
        self.waiting.append(seq)

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def schedule(self) -> list[ScheduledSeq]:
        budget = self.config.max_num_batched_tokens
        batch: list[ScheduledSeq] = []
        preempted = False
        for seq in list(self.running):
            if seq not in self.running:  # preempted below to make room for an earlier one
                continue
            try:
                num_new, preempted_now = self._schedule_running(seq, budget)
            except Exception as exc:  # noqa: BLE001 - this sequence alone fails
                self._fault(seq, exc)
                continue
            preempted = preempted or preempted_now
            if num_new and seq in self.running:
                batch.append(ScheduledSeq(seq, num_new))
                budget -= num_new
        if not preempted:
            budget = self._admit(batch, budget)
        self._add_drafts(batch, budget)
        return batch

    def take_faults(self) -> list[tuple[Sequence, Exception]]:
        """The sequences whose scheduling raised since the last call (already out of the queues)."""
        faults, self.faults = self.faults, []
        return faults

    def _schedule_running(self, seq: Sequence, budget: int) -> tuple[int, bool]:
        """(tokens `seq` computes this step, whether a sequence was preempted to make room)."""
        pending = seq.num_tokens - seq.num_computed
        num_new = min(pending, budget)
        if num_new <= 0:
            seq.draft = []
            return 0, False
        if num_new < pending:
            seq.draft = []
        preempted = False
        while not self.blocks.grow(seq.table, seq.num_computed + num_new):
            victim = self.running[-1]
            self._preempt(victim)
            preempted = True
            if victim is seq:
                break
        return num_new, preempted

    def _fault(self, seq: Sequence, exc: Exception) -> None:
        """Take `seq` out of the queues and report it; its blocks are freed when it is finished."""
        if seq in self.running:
            self.running.remove(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)
        seq.draft = []
        self.faults.append((seq, exc))

    def _add_drafts(self, batch: list[ScheduledSeq], budget: int) -> None:
        """Drafts (speculative decoding) are verified after all known tokens, in the budget that
        every known token and admission left, and only where their KV slots are free: they never
        preempt a sequence, delay an admission or shorten a prefill chunk. The step's known tokens
        are therefore what they would be without speculation, so prefill chunks split alike and
        outputs stay those of the plain path wherever the kernels are row-invariant."""
        for entry in batch:
            seq = entry.seq
            if not seq.draft:
                continue
            num_draft = min(len(seq.draft), budget)
            try:
                if num_draft and not self.blocks.grow(seq.table, seq.num_computed + entry.num_new + num_draft):
                    num_draft = 0
            except Exception:  # noqa: BLE001 - no room for a draft is never a request's fault:
                num_draft = 0  # the step computes its known tokens (their blocks are grown)
            seq.draft = seq.draft[:num_draft]
            entry.num_new += num_draft
            entry.num_draft = num_draft
            budget -= num_draft

    def _admit(self, batch: list[ScheduledSeq], budget: int) -> int:
        for seq in list(self.waiting):
            if budget <= 0 or len(self.running) >= self.config.max_num_seqs:
                break
            table = None
            try:
                if self._prefix_computed_in(batch, seq):
                    continue  # next step reads that prefix from the cache instead of computing it twice
                table = self.blocks.new_table()
                cached = self.blocks.allocate_prefix(table, seq.token_ids, seq.restore_point)
                remaining = seq.num_tokens - cached
                if not self.config.chunked_prefill and remaining > budget and batch:
                    self.blocks.free(table)
                    break
                num_new = remaining if not self.config.chunked_prefill else min(remaining, budget)
                if not self.blocks.grow(table, cached + num_new):
                    self.blocks.free(table)
                    break
            except Exception as exc:  # noqa: BLE001 - this sequence alone fails
                self._free_quietly(table)
                self._fault(seq, exc)
                continue
            self.waiting.remove(seq)
            if seq.num_computed == 0 and not seq.output_token_ids:
                seq.num_cached_prompt = cached
            seq.table, seq.num_computed, seq.status = table, cached, RequestStatus.RUNNING
            if seq.request.first_scheduled_time is None:  # queue time ends here (not at a resume)
                seq.request.first_scheduled_time = time.perf_counter()
            self.running.append(seq)
            batch.append(ScheduledSeq(seq, num_new))
            budget -= num_new
        return budget

    def _prefix_computed_in(self, batch: list[ScheduledSeq], seq: Sequence) -> bool:
        """Whether a sequence of this step's batch computes at least the next full KV block of
        `seq`'s tokens (same tokens from the start, past what the prefix cache holds for `seq`).
        Admitting `seq` now would compute that block twice (requests sharing a system prompt
        all arriving at once) and split later decodes into several shared-prefix groups; one
        step later it is a cache hit. Never defers for ever: the other sequence makes progress."""
        if not self.blocks.enable_prefix_caching:
            return False
        size = self.blocks.block_size
        tokens = seq.token_ids
        # Cheap filter first: only prefill chunks that start with the same block can qualify.
        chunks = [(item.seq, item.seq.num_computed + item.num_new) for item in batch if item.num_new >= size]
        chunks = [(other, end, ids) for other, end in chunks
                  if (ids := other.token_ids)[:size] == tokens[:size]]
        if not chunks:
            return False
        need = len(self.blocks.match_prefix(tokens)) * size + size   # cached tokens + the next block
        return any(other.num_computed <= need - size and min(end, len(tokens) - 1) >= need
                   and ids[:need] == tokens[:need] for other, end, ids in chunks)

    def _preempt(self, seq: Sequence) -> None:
        """Free the sequence's blocks; it will be recomputed from its tokens later."""
        self.running.remove(seq)
        self.blocks.free(seq.table)
        seq.restore_point = max(seq.restore_point, seq.num_computed)
        seq.num_computed = 0
        seq.draft = []
        seq.status = RequestStatus.WAITING
        self.waiting.appendleft(seq)
        self.num_preemptions += 1

    def finish(self, seq: Sequence) -> None:
        """Drop a finished or aborted sequence and free its blocks at once."""
        if seq in self.running:
            self.running.remove(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)
        self.blocks.free(seq.table)

    def _free_quietly(self, table) -> None:
        """Free a table an admission that raised had taken (a second fault there is not raised:
        the first one is reported)."""
        if table is None:
            return
        try:
            self.blocks.free(table)
        except Exception:  # noqa: BLE001
            pass
