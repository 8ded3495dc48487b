"""Scan and cache strategies of the context-free back end: how a lexeme DFA's token runs are
computed fast (vectorized and compiled walks of the token trie, literal and counted-chain
shortcuts, shared tails) and remembered (run cache, lexeme DFA cache, whole-state masks).
Each strategy gives the same answer as the plain walk; they only change its cost.
"""
