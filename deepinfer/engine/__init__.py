"""The engine: requests, continuous batching scheduler, step loop, LLM facade.

Drives model forward passes over a paged KV cache, applies constraint masks
through the `Matcher` API only, and samples. Knows nothing about HTTP.
"""
