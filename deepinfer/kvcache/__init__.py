"""Paged KV cache: blocks, block tables, prefix caching with a hash chain.

Owns KV memory and its bookkeeping; knows nothing about models' math beyond
the `KVCache` protocol, and nothing about sampling or constraints.
"""
