"""Matcher: the per-request walker of a compiled constraint.

Owns the stack of automaton states (for rollback), end-of-sequence handling
and writing masks into a caller's bitmask (numpy array or torch tensor, without
importing torch). Knows nothing about how the automaton was built.

Error policy: on the per-token path (fill_next_token_bitmask, accept_token,
is_terminated, is_completed, find_jump_forward_string) the Matcher never
raises for user or grammar errors: a token that is not allowed returns False
and leaves the state unchanged. Programming errors (a bitmask row narrower than
the vocabulary, rolling back more tokens than were accepted) raise ValueError.
"""

from __future__ import annotations

import numpy as np

from .compiler import CompiledConstraint
from .regular.mask_bits import set_eos_bits

_TERMINATED = object()  # pushed on the stack when an eos token is accepted


class Matcher:
    """Walks one CompiledConstraint token by token."""

    def __init__(self, compiled: CompiledConstraint) -> None:
        self.compiled = compiled
        self._automaton = compiled.automaton
        self._vocab = compiled.vocab
        self._eos = compiled.vocab.eos_ids
        self._view = None  # (tensor, row, its address and shape, numpy view): _target
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        self._stack: list = [self._automaton.initial_state()]

    @property
    def num_accepted(self) -> int:
        """Tokens accepted since the last reset (what rollback can undo)."""
        return len(self._stack) - 1

    @property
    def state(self):
        """The automaton state now (opaque; None after termination)."""
        top = self._stack[-1]
        return None if top is _TERMINATED else top

    def is_terminated(self) -> bool:
        return self._stack[-1] is _TERMINATED

    def is_completed(self) -> bool:
        """The text so far is complete: an eos token is allowed now (or was accepted)."""
        top = self._stack[-1]
        return top is _TERMINATED or self._automaton.is_accepting(top)

    # -------------------------------------------------------------- per token
    def fill_next_token_bitmask(self, bitmask, row: int = 0) -> None:
        """Write the allowed next tokens into `bitmask[row]` (int32, bit 1 = allowed).

        Does not change the matcher's state. After termination only eos is allowed.
        """
        words = self._vocab.words
        target = self._target(bitmask, row)
        out = target if target is not None else np.empty(bitmask.shape[-1], dtype=np.int32)
        if out.shape[0] < words:
            raise ValueError(f"bitmask row has {out.shape[0]} words, the vocabulary needs {words}")
        head = out[:words]
        top = self._stack[-1]
        if top is _TERMINATED:
            head[:] = 0
            set_eos_bits(head, self._vocab)
        else:
            self._automaton.fill_mask(top, head)
            if self._automaton.is_accepting(top):
                set_eos_bits(head, self._vocab)
        out[words:] = 0
        if target is None:  # e.g. a CUDA tensor: copy the row over
            bitmask[row].copy_(bitmask.new_tensor(out))

    def accept_token(self, token_id: int) -> bool:
        """Advance by one token; False (state unchanged) if it is not allowed."""
        top = self._stack[-1]
        if top is _TERMINATED:
            return False
        token_id = int(token_id)  # numpy / torch scalars hash differently
        if token_id in self._eos:
            if self._automaton.is_accepting(top):
                self._stack.append(_TERMINATED)
                return True
            return False
        nxt = self._automaton.next_state(top, token_id)
        if nxt is None:
            return False
        self._stack.append(nxt)
        return True

    def rollback(self, num_tokens: int) -> None:
        """Undo the last `num_tokens` accepted tokens (eos included)."""
        if not 0 <= num_tokens <= self.num_accepted:
            raise ValueError(f"cannot roll back {num_tokens} tokens; {self.num_accepted} accepted")
        if num_tokens:
            del self._stack[-num_tokens:]

    def find_jump_forward_string(self) -> str:
        """Text every continuation must start with ("" if none); complete UTF-8 only."""
        top = self._stack[-1]
        if top is _TERMINATED:
            return ""
        data = self._automaton.forced_bytes(top)
        return _complete_utf8_prefix(data)

    def accept_string(self, text: str | bytes) -> bool:
        """Advance by raw text (for tests and prefills); counts as one rollback step."""
        top = self._stack[-1]
        if top is _TERMINATED:
            return False
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        nxt = self._automaton.advance_bytes(top, data)
        if nxt is None:
            return False
        self._stack.append(nxt)
        return True

    def _target(self, bitmask, row: int):
        """_row_view, remembered for the tensor filled last. Why: a torch tensor's numpy view
        costs ~8 us to make (indexing, .numpy(), device checks), a third of a typical mask step,
        and callers fill the same bitmask row at every token. Used only while the tensor is the
        same object at the same address and shape. (Keeping the view changes nothing for the
        caller: a tensor whose memory numpy has seen can no longer be resized in place anyway.)"""
        if isinstance(bitmask, np.ndarray):
            return _row_view(bitmask, row)
        kept = self._view
        where = (bitmask.data_ptr(), bitmask.shape)
        if kept is not None and kept[0] is bitmask and kept[1] == row and kept[2] == where:
            return kept[3]
        view = _row_view(bitmask, row)
        self._view = None if view is None else (bitmask, row, where, view)
        return view

    def allowed_token_ids(self) -> np.ndarray:
        """Sorted ids allowed next (convenience for tests and debugging; not per-token fast)."""
        row = np.zeros(self._vocab.words, dtype=np.int32)
        self.fill_next_token_bitmask(row[None, :], 0)
        bits = np.unpackbits(row.view(np.uint8), bitorder="little")
        return np.flatnonzero(bits[: self._vocab.size])


def _row_view(bitmask, row: int):
    """A writable numpy view of one row, or None when the memory is not host memory."""
    if isinstance(bitmask, np.ndarray):
        view = bitmask[row] if bitmask.ndim == 2 else bitmask
        if view.dtype != np.int32:
            raise ValueError(f"bitmask must be int32, got {view.dtype}")
        return view
    device = getattr(bitmask, "device", None)
    if device is not None and getattr(device, "type", "cpu") != "cpu":
        return None
    view = bitmask[row].numpy() if bitmask.dim() == 2 else bitmask.numpy()
    if view.dtype != np.int32:
        raise ValueError(f"bitmask must be int32, got {view.dtype}")
    return view


def _complete_utf8_prefix(data: bytes) -> str:
    for cut in range(len(data), max(len(data) - 4, -1), -1):
        try:
            return data[:cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return ""


def fill_next_token_bitmask(matcher: Matcher, bitmask, row: int = 0) -> None:
    """Function form of Matcher.fill_next_token_bitmask (xgrammar style)."""
    matcher.fill_next_token_bitmask(bitmask, row)
