"""The synchronous engine: requests in, one batched forward pass per `step()`, deltas out.

    step = schedule -> prepare -> forward -> mask -> sample -> advance -> postprocess

The constraint system hooks in at two points only, both through `guided.py`: the bitmask
before sampling (`verify.sample_rows`) and advancing by the sampled token after it
(`output.append_token`); jump-forward and draft walks ride on the same functions.
Not thread safe: `AsyncEngine` drives it from one thread.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from concurrent.futures import Future, wait

import torch

from deepinfer.engine import guided
from deepinfer.engine.admission import check_request
from deepinfer.engine.constraints import ConstraintService
from deepinfer.engine.config import EngineConfig
from deepinfer.engine.forward_probe import forward_curve
from deepinfer.engine.invariance import batch_invariant
from deepinfer.engine.isolation import run_isolated
from deepinfer.engine.speculation.jump_forward import ForcedText, jump_forward
from deepinfer.engine.output import append_token, request_delta
from deepinfer.engine.scheduler import ScheduledSeq, Scheduler, SchedulerConfig
from deepinfer.engine.sequence import Sequence
from deepinfer.engine.speculation.speculative import Speculator
from deepinfer.engine.speculation.verify import rows_of, sample_rows
from deepinfer.errors import UserError
from deepinfer.kvcache import StorageConfig, TierConfig, build_storage
from deepinfer.model import quantized_throughout
from deepinfer.sampling import derive_seed
from deepinfer.types import FinishReason, Request, RequestOutput, RequestStatus, SamplingParams, fresh_seed


class Engine:
    def __init__(self, model, tokenizer, config: EngineConfig | None = None) -> None:
        self.model, self.tokenizer = model, tokenizer
        config = config or EngineConfig()
        if config.batch_invariant is None:  # auto: free where the kernels are row-invariant anyway
            config = dataclasses.replace(config, batch_invariant=quantized_throughout(model))
        self.config = config
        self.model_config = model.config
        self.max_model_len = config.max_model_len or model.config.max_position_embeddings
        self.kv = build_storage(model, StorageConfig(
            config.block_size, config.num_kv_blocks, config.kv_cache_bytes, config.enable_prefix_caching,
            config.max_num_seqs, config.max_num_batched_tokens, config.swa_replay, config.swa_replay_tokens,
            TierConfig(config.kv_tier_dir, config.kv_tier_bytes, config.kv_tier_host_bytes)))
        self.blocks = self.kv.blocks
        self.scheduler = Scheduler(self.blocks, SchedulerConfig(
            config.max_num_batched_tokens, config.max_num_seqs, config.chunked_prefill))
        self.constraints = ConstraintService(tokenizer, model.config.vocab_size)
        self.eos_ids = frozenset(tokenizer.eos_token_ids)
        self.forced_text = ForcedText(tokenizer)
        self.requests: dict[str, Request] = {}
        self._compiling: dict[str, Future] = {}
        self._touched: dict[str, Request] = {}   # requests with news for the caller this step
        self._ids = itertools.count()
        self._speculator: Speculator | None = None
        self._token_texts: dict[int, str] = {}   # token id -> its text alone (text-suffix drafts)
        self.counters = {"prompt_tokens": 0, "generation_tokens": 0, "steps": 0, "jump_forward_tokens": 0}

    @property
    def compiler(self):
        return self.constraints.compiler

    # -- requests ---------------------------------------------------------------------------------
    def add_request(self, prompt_token_ids: list[int], params: SamplingParams | None = None,
                    request_id: str | None = None, prompt: str | None = None) -> str:
        params = params or SamplingParams()
        self.check_request(prompt_token_ids, params)
        request_id = request_id if request_id is not None else f"req-{next(self._ids)}"
        if request_id in self.requests:
            raise UserError(f"request id {request_id!r} is already in use")
        request = Request(request_id, list(prompt_token_ids), params, time.perf_counter(), prompt)
        seed = params.seed if params.seed is not None else fresh_seed()
        skip = params.skip_special_tokens
        request.sequences = [Sequence(request, i, derive_seed(seed, i), self.tokenizer.detokenizer(skip))
                             for i in range(params.n)]
        self.requests[request_id] = request
        self.counters["prompt_tokens"] += len(prompt_token_ids)
        if params.constraint is not None:
            request.status = RequestStatus.WAITING_FOR_GRAMMAR
            self._compiling[request_id] = self.constraints.submit(params)
        else:
            self._enqueue(request)
        return request_id

    def check_request(self, prompt_token_ids: list[int], params: SamplingParams) -> None:
        """Raise admission.RequestError (naming the field) for a request no step could run."""
        check_request(prompt_token_ids, params, self.model_config.vocab_size, self.max_model_len)

    def abort(self, request_id: str) -> None:
        """Finish the request now ("abort") and free its KV blocks."""
        request = self.requests.get(request_id)
        if request is None:
            return
        self._compiling.pop(request_id, None)
        for seq in request.sequences:
            if not seq.finished:
                seq.finish(FinishReason.ABORT)
                self._release(seq)
        self._touched[request_id] = request

    def has_unfinished(self) -> bool:
        return bool(self.requests)

    # -- the step ---------------------------------------------------------------------------------
    @property
    def speculator(self) -> Speculator | None:
        """Built when speculation is first on (config.speculative may be switched between runs)."""
        if self.config.speculative and self._speculator is None:
            self._speculator = Speculator(self.config.speculative_config, self.eos_ids, self._token_text,
                                          self.tokenizer.encode, forward_curve(self))
        return self._speculator if self.config.speculative else None

    def _token_text(self, token: int) -> str:
        text = self._token_texts.get(token)
        if text is None:
            text = self._token_texts[token] = self.tokenizer.decode([token], skip_special_tokens=False)
        return text

    def reset_speculator(self) -> None:
        """Forget drafts' shared outputs, acceptance statistics and the step-cost fit (benchmarks;
        forward passes probed per shape are kept)."""
        self._speculator = None

    def step(self) -> list[RequestOutput]:
        self._admit_compiled()
        speculator = self.speculator
        if speculator is not None:
            speculator.plan(self.scheduler.running, self.config.max_num_batched_tokens,
                            self.forced_text if self.config.jump_forward else None, self.max_model_len,
                            waiting=len(self.scheduler.waiting))
            # planning faults drop drafts (speculation/faults.py); a matcher left broken fails its request
            for seq, exc in speculator.faults.take_broken():
                self._fail_request(seq.request, exc)
        start = time.process_time()  # CPU time: the cost model must not learn other processes' load
        batch = self.scheduler.schedule()
        for seq, exc in self.scheduler.take_faults():  # scheduling one sequence raised: it alone fails
            self._fail_request(seq.request, exc)
        batch = [item for item in batch if not item.seq.finished]  # (another sequence of its request failed)
        if batch:
            # A fault while computing fails only the request that causes it (isolation.py).
            done = run_isolated(batch, self._compute, self._fail_request)
            self._advance(done.batch, done.tokens, done.logprobs)
            if speculator is not None and not done.faulted and all(s.samples for s in batch):
                speculator.observe_step(sum(s.num_new for s in batch), time.process_time() - start)
        else:
            self._fail_unschedulable()
        return self._postprocess()

    def _compute(self, batch: list[ScheduledSeq]) -> tuple[list[int], list]:
        """Forward and sample one batch -> (tokens, logprobs), a row per sampled position. Changes
        no sequence: rerunning it on the same sequences gives the same result (isolation.py)."""
        input_ids, positions, cache, logits_indices = self._prepare(batch)
        logits = self._forward(input_ids, positions, cache, logits_indices)
        rows = rows_of([s.seq for s in batch if s.samples])
        with torch.inference_mode():  # masks and penalties edit the (inference) logits in place
            return sample_rows(rows, logits, self.eos_ids)

    def _fail_request(self, request: Request, exc: BaseException) -> None:
        """Finish every sequence of the request with "error" and free its KV blocks."""
        message = (f"the engine failed computing this request and stopped it ({type(exc).__name__}: {exc}); "
                   f"the other requests went on")
        request.error = message
        self._compiling.pop(request.request_id, None)
        for seq in request.sequences:
            if not seq.finished:
                seq.finish(FinishReason.ERROR, error=message)
                self._release(seq)
        self._touched[request.request_id] = request

    def _prepare(self, batch: list[ScheduledSeq]):
        ids, positions, parts, logits_indices, offset = [], [], [], [], 0
        for item in batch:
            seq, start = item.seq, item.seq.num_computed
            ids += (seq.token_ids + seq.draft)[start:start + item.num_new]
            positions += range(start, start + item.num_new)
            parts.append((seq.table, start, item.num_new))
            offset += item.num_new
            if item.samples:  # the last known token's row, then one per draft token
                logits_indices += range(offset - 1 - item.num_draft, offset)
        cache = self.kv.forward_cache(parts, self.config.batch_invariant)
        return (torch.tensor(ids, dtype=torch.long), torch.tensor(positions, dtype=torch.long), cache,
                torch.tensor(logits_indices, dtype=torch.long))

    def _forward(self, input_ids, positions, cache, logits_indices) -> torch.Tensor:
        with torch.inference_mode(), batch_invariant(self.config.batch_invariant, self.config.linear_tile):
            if logits_indices.numel() == 0:  # only prefill chunks this step: no logits needed
                logits_indices = logits_indices.new_zeros(1)
            logits = self.model.forward(input_ids, positions, cache, logits_indices=logits_indices).float()
        return logits  # [N, vocab] float32, an inference tensor: sampled inside inference mode

    def _advance(self, batch, tokens: list[int], logprobs: list) -> None:
        row = 0
        for item in batch:
            seq, samples = item.seq, item.samples  # (before num_computed moves)
            count = item.num_draft + 1 if samples else 0
            if seq.finished:  # another sequence of its request failed below
                row += count
                continue
            try:
                seq.num_computed += item.num_new - item.num_draft
                if samples:
                    self._accept(seq, tokens[row:row + count], logprobs[row:row + count])
                self.blocks.commit(seq.table, seq.token_ids, seq.num_computed)
            except Exception as exc:  # its matcher, detokenizer, ...: only this request fails
                self._fail_request(seq.request, exc)  # (frees its blocks)
                row += count
                continue
            row += count
            if seq.finished:
                self._release(seq)
        self.counters["steps"] += 1

    def _accept(self, seq: Sequence, tokens: list[int], logprobs: list) -> None:
        """Append sampled (and jumped) tokens while the draft predicted them.

        Row i of the sequence fed draft[:i] at the positions after its known tokens, so its sample
        tokens[i] is the next token exactly when the tokens appended so far equal draft[:i]; and
        row i's KV is valid when draft[:i] is a prefix of what was appended. Jump-forward and stops
        apply after every token, as without a draft (a draft may carry the forced tokens)."""
        draft, before = seq.draft, len(seq.output_token_ids)
        row = 0
        while True:
            append_token(seq, tokens[row], logprobs[row], self.eos_ids, self.max_model_len)
            self.counters["generation_tokens"] += 1 + self._jump_forward(seq)
            appended = seq.output_token_ids[before:]
            row = len(appended)
            if seq.finished or row > len(draft) or draft[:row] != appended:
                break
        appended = seq.output_token_ids[before:]
        matched = next((i for i, (a, b) in enumerate(zip(draft, appended)) if a != b), min(len(draft), len(appended)))
        seq.num_computed += min(matched, len(appended) - 1)  # one appended token always stays pending
        self._touched[seq.request.request_id] = seq.request
        if self._speculator is not None:
            self._speculator.record(seq, len(draft), matched)
        seq.draft, seq.draft_info = [], None

    def _release(self, seq: Sequence) -> None:
        self.scheduler.finish(seq)
        if self._speculator is not None:
            self._speculator.release(seq)

    def _jump_forward(self, seq: Sequence) -> int:
        """Append forced tokens now; the next step computes them as one chunk (no sampling)."""
        if not self.config.jump_forward:
            return 0
        count = jump_forward(seq, self.forced_text, self.eos_ids, self.max_model_len)
        self.counters["jump_forward_tokens"] += count
        return count

    def _postprocess(self) -> list[RequestOutput]:
        outputs = []
        for request in self._touched.values():
            outputs.append(request_delta(request, request.sequences))
            if request.is_finished:
                self.requests.pop(request.request_id, None)
        self._touched.clear()
        return outputs

    # -- waiting for constraints ----------------------------------------------------------------
    def _admit_compiled(self) -> None:
        if self._compiling:
            # Give compiles (mostly cache hits) a moment, so that requests submitted together start
            # together instead of trickling in one step each; block longer only when idle.
            wait(list(self._compiling.values()), timeout=0.002 if self.scheduler.has_work() else 0.05)
        for request_id, future in list(self._compiling.items()):
            if not future.done():
                continue
            del self._compiling[request_id]
            request = self.requests[request_id]
            try:
                request.compiled = future.result()
            except Exception as exc:  # a bad constraint fails only its own request
                request.error = str(exc)
                for seq in request.sequences:
                    seq.finish(FinishReason.ERROR, error=f"constraint error: {exc}")
                self._touched[request_id] = request
                continue
            try:
                for seq in request.sequences:
                    seq.matcher = guided.start(request.compiled)
                    # Text forced from the start (e.g. "{") joins the prompt's prefill.
                    self.counters["generation_tokens"] += self._jump_forward(seq)
                    if seq.finished:
                        self._touched[request_id] = request
            except Exception as exc:  # a matcher that cannot start fails only its own request
                self._fail_request(request, exc)
                continue
            self._enqueue(request)

    def _enqueue(self, request: Request) -> None:
        request.status = RequestStatus.WAITING
        for seq in request.sequences:
            if not seq.finished:  # jump-forward may finish a fully forced output before any step
                self.scheduler.add(seq)
                if self.kv.tier is not None:  # its prefix's blocks read from disk while it waits
                    self.kv.tier.prefetch(seq.token_ids)
            elif self._speculator is not None:
                self._speculator.release(seq)

    def _fail_unschedulable(self) -> None:
        """Nothing runs but something waits: its prompt does not fit in the whole KV pool."""
        if self.scheduler.running or not self.scheduler.waiting:
            return
        seq = self.scheduler.waiting[0]
        if not self.blocks.can_grow(self.blocks.new_table(), seq.num_tokens + 1):  # a waiting seq holds none
            seq.finish(FinishReason.ERROR, error=f"the sequence needs {seq.num_tokens + 1} tokens of KV cache; "
                                                 f"the pool holds {self.blocks.capacity_tokens}")
            self._release(seq)
            self._touched[seq.request.request_id] = seq.request

    # -- introspection ------------------------------------------------------------------------------
    def enable_kv_events(self) -> bool:
        """Publish prefix-cache changes (kvcache/events.py) for `drain_kv_events`; False where this
        model's block manager does not publish them."""
        if not getattr(self.blocks, "publishes_kv_events", False):
            return False
        self.blocks.enable_events()
        return True

    def drain_kv_events(self) -> list:
        """KV events since the last call, oldest first (thread-safe: the log has its own lock)."""
        events = getattr(self.blocks, "events", None)
        return events.drain() if events is not None else []

    def stats(self) -> dict:
        return {
            "num_waiting": len(self.scheduler.waiting) + len(self._compiling),
            "num_running": len(self.scheduler.running),
            "num_waiting_for_grammar": len(self._compiling),
            "kv_usage": self.blocks.usage,
            "kv_blocks": self.blocks.num_blocks,
            "prefix_cache_hit_rate": self.blocks.stats.hit_rate,
            "prefix_cache_hit_tokens": self.blocks.stats.hit_tokens,
            "swa_replayed_tokens": self.blocks.replayed_tokens,
            "num_preemptions": self.scheduler.num_preemptions,
            "constraint_compile_seconds": self.constraints.compile_seconds,
            "constraints_compiled": self.constraints.num_compiled,
            "constraint_errors": self.constraints.num_errors,
            **self.counters,
            **(self._speculator.counters if self._speculator is not None else {}),
        }
