"""The protocol between the Matcher and a back end: a token-level automaton.

A back end compiles a constraint into a `TokenAutomaton` over a Vocabulary.
The Matcher keeps a stack of its states (for rollback) and never looks inside
them. The regular back end (`regular.py`) uses int DFA states; a context-free
back end (`cfg.py`) may use any immutable value (e.g. a parser-state tuple).

Contract:
- states are immutable values (never mutated after being returned), so the
  Matcher can keep old ones for rollback;
- `fill_mask(state, row)` writes an int32 row [ceil(V/32)] with bit i set iff
  text token i may come next (tokens with no text, and eos ids, are clear);
  the Matcher sets the eos bits itself when `is_accepting(state)`;
- `next_state(state, token_id)` returns the state after the token's bytes, or
  None if the token is not allowed; it is never called with an eos id;
- `is_accepting(state)`: the text so far is a complete sentence (eos allowed);
- `forced_bytes(state)`: bytes every continuation must start with (b"" if none);
- `advance_bytes(state, data)`: the state after raw bytes, or None (Matcher.accept_string);
- none of these raise for disallowed input: they return None / empty.
"""

from __future__ import annotations

from typing import Any, Hashable, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class TokenAutomaton(Protocol):
    vocab: Any  # deepinfer.constraints.vocab.Vocabulary

    def initial_state(self) -> Hashable: ...

    def fill_mask(self, state: Hashable, row: np.ndarray) -> None: ...

    def next_state(self, state: Hashable, token_id: int) -> Hashable | None: ...

    def is_accepting(self, state: Hashable) -> bool: ...

    def forced_bytes(self, state: Hashable) -> bytes: ...

    def advance_bytes(self, state: Hashable, data: bytes) -> Hashable | None: ...
