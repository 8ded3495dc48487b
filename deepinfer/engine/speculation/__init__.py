"""Speculative decoding and jump-forward: draft tokens without a second model, verify them in
one step, and append constraint-forced text without sampling.

Owns drafters (`suffix_drafts`, `prompt_drafts`, `text_drafts`, `schema_drafts`, `drafts`) and the
choice among them (`candidates`), draft walks through the constraint (`draft_walk`), the survival
model of draft tokens (`confidence`) and what drafts achieved (`outcomes`), the step-cost model
(`step_cost`) and draft-length scheduling (`draft_lengths`, `speculative`, `settings`), the verify
step (`verify`) and jump-forward (`jump_forward`). Outputs are unchanged by any of it: a draft only
saves model steps. Must not know the model, the KV cache, the scheduler's policy or how a
constraint works (it asks the matcher only through `engine/guided.py`; the forward pass is timed
by a callback the engine gives the cost model).
"""
