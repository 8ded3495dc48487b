"""OpenAI- and Anthropic-compatible HTTP server over the AsyncEngine.

Parses requests, validates constraints (errors become HTTP 400), streams SSE.
Never reaches into the scheduler or model internals.
"""
