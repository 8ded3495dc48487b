"""Speculative decoding and jump-forward: draft tokens without a second model, verify them in
one step, and append constraint-forced text without sampling.

Owns drafters (`prompt_drafts`, `text_drafts`, `schema_drafts`, `drafts`), draft walks through
the constraint (`draft_walk`), draft-length scheduling (`draft_lengths`, `speculative`), the
verify step (`verify`) and jump-forward (`jump_forward`). Outputs are unchanged by any of it: a
draft only saves model steps. Must not know the model, the KV cache, the scheduler's policy or
how a constraint works (it asks the matcher only through `engine/guided.py`).
"""
