"""Sampling: penalties, temperature, top-k/p, min-p and seeded Gumbel-max draws.

Turns logits rows into tokens deterministically from (seed, position); knows
nothing about models, caches or how masks were computed.
"""
