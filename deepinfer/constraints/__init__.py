"""The constraint compiler: regex, JSON Schema and EBNF to token-level masks.

Front ends lower text into one grammar IR (`ir.py`); the back end compiles it
against a tokenizer's vocabulary into per-state token masks; a per-request
`Matcher` walks them. Never imports the engine, model or server; only
`bitmask.py` touches torch.
"""
