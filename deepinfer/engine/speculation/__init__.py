"""Speculative decoding and jump-forward: draft tokens without a second model, verify them in
one step, and append constraint-forced text without sampling.

Drafters (`prompt_drafts`, `text_drafts`, `schema_drafts`), draft-length scheduling
(`draft_lengths`), the verify step (`verify`, `speculative`) and jump-forward
(`jump_forward`). Outputs are unchanged by any of it: a draft only saves model steps.
"""
