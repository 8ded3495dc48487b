"""The engine's one door to a constraint's `Matcher`: every call the engine makes on it is here.

A constrained sequence holds its Matcher (`Sequence.matcher`; None when unconstrained or
finished); the step loop, jump-forward, draft walks and the verifier drive it only through
these functions, so what the engine asks of a constraint is one short list: start a walk,
advance it by a token, undo tokens, probe a token without moving, write the mask of allowed
next tokens, and read the forced text and whether the constraint is complete or finished.
Knows nothing about sequences, drafts or sampling: each function takes the matcher itself.
"""

from __future__ import annotations

import weakref

import numpy as np

from deepinfer.constraints import Matcher
from deepinfer.constraints.completion import completions, needed_tokens


def start(compiled) -> Matcher:
    """A fresh walk of a compiled constraint (one per sequence)."""
    return Matcher(compiled)


def advance(matcher, token: int) -> bool:
    """Move past `token`; False (nothing moved) when the constraint refuses it."""
    return matcher.accept_token(token)


def advance_known(matcher, tokens: list[int], what: str) -> None:
    """Move past tokens already checked legal at this very state (a refusal is an engine bug)."""
    for token in tokens:
        if not matcher.accept_token(token):
            raise RuntimeError(f"internal error: {what} refused by the constraint")


def undo(matcher, count: int) -> None:
    """Take back the last `count` tokens advanced."""
    matcher.rollback(count)


def allows(matcher, token: int) -> bool:
    """Whether `token` may come next; the matcher ends where it began."""
    if matcher.accept_token(token):
        matcher.rollback(1)
        return True
    return False


def allows_any(matcher, tokens: list[int]) -> bool:
    """Whether any of `tokens` may come next (asked one by one; the matcher does not move)."""
    return any(allows(matcher, token) for token in tokens)


def depth(matcher) -> int:
    """Tokens advanced since the walk started (what `undo` can take back)."""
    return matcher.num_accepted


def write_mask(matcher, bitmask, row: int) -> None:
    """The allowed next tokens as bits of `bitmask[row]` (int32 words)."""
    matcher.fill_next_token_bitmask(bitmask, row)


def mask_row(matcher) -> np.ndarray:
    """The allowed next tokens as one int32 row of bit words (a fresh array)."""
    row = np.zeros((1, vocabulary(matcher).words), dtype=np.int32)
    matcher.fill_next_token_bitmask(row, 0)
    return row[0]


def vocabulary(matcher):
    """The token vocabulary the constraint was compiled for (`constraints.Vocabulary`)."""
    return matcher.compiled.vocab


def forced_text(matcher) -> str:
    """Text every continuation starts with ("" when none)."""
    return matcher.find_jump_forward_string()


def is_complete(matcher) -> bool:
    """The text so far satisfies the constraint: an end token is allowed now."""
    return matcher.is_completed()


def is_finished(matcher) -> bool:
    """An end token was advanced: nothing more may follow."""
    return matcher.is_terminated()


BUDGET_WINDOW = 64  # sampled tokens are checked once the tokens left are within this of the need
# matcher -> (depth, text): the rest of the closing being written, while the engine follows it
_plans: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def fit_budget(matcher, token: int, tokens_left: int) -> int:
    """`token`, or a token that keeps a complete output within `tokens_left` (this one included).

    Once the tokens left come within BUDGET_WINDOW of the constraint's need from its start, a
    sampled token is kept only when a completion after it still fits in the tokens left after it
    (constraints.completion's bound); otherwise the engine writes a closing: the completion walk
    from here, spelled longest token first, one token per step (or the end token, where the text
    is complete). Its rest is remembered, so each step of it takes one token of a text known to
    complete: once the bound fits, the output always ends complete, by the end token or complete
    when max_tokens runs out."""
    compiled = matcher.compiled
    need = needed_tokens(compiled)
    if need is None or tokens_left > need + BUDGET_WINDOW or matcher.is_terminated():
        return token
    if token in compiled.vocab.eos_ids:
        return token  # the matcher checks it is allowed here
    if matcher.accept_token(token):
        after = completions(compiled).bound(matcher.state)
        matcher.rollback(1)
        if after is not None and after[0] <= tokens_left - 1:
            _plans.pop(matcher, None)
            return token
    if matcher.is_completed():
        end = min(compiled.vocab.eos_ids)
        return end if allows(matcher, end) else token
    return _closing_token(matcher, token)


def _closing_token(matcher, token: int) -> int:
    """The next token of the closing being written (a new one from the walk if none is)."""
    comp = completions(matcher.compiled)
    plan = _plans.get(matcher)
    text = plan[1] if plan is not None and plan[0] == matcher.num_accepted else None
    if text is None:
        walk = comp.walk(matcher.state)
        if walk is None:
            return token
        text = walk.text
    ids = comp.spell(text)
    if not ids or not allows(matcher, ids[0]):
        return token
    _plans[matcher] = (matcher.num_accepted + 1, text[len(vocabulary(matcher).token_bytes[ids[0]]):])
    return ids[0]
