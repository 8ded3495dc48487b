"""Lexemes and follow sets shared by the scan-run tests (numpy walks in test_cfg_speedups.py,
compiled walks in test_native_walks.py): string-like patterns that reach every run strategy,
a lexeme built from a pattern, and a run's entries as sets."""

from __future__ import annotations

import numpy as np

from deepinfer.constraints import ir
from deepinfer.constraints.cfg.lexeme import Lexeme, analyze
from deepinfer.constraints.cfg.scan.cache import ScanCache
from deepinfer.constraints.regular.dfa import Limits
from deepinfer.constraints.frontends.regex import parse_regex
from deepinfer.constraints.regular.nfa import build_nfa

# string-like lexemes: a key trie that is "any string but these names" (tails),
# bounded strings (uniform counting chains), and a lexeme with inner boundaries
PATTERNS = [
    r'"([^"a]|a[^"b]|ab[^"c])[^"]*"',
    r'"[^"\\]{0,12}"',
    r'"[a-z]{2,40}"',
    r'-?(0|[1-9][0-9]*)(\.[0-9]+)?',
    r'(true|false|null)( ?, ?(true|false))*',
    r'[a-z0-9 _]',          # a big byte group into an accepting state: crossings at offset 1
    r'[^,\]}]{1,2}',
    # counting chains (chain_runs.py): JSON string bodies with escapes and length
    # bounds, a chain whose end accepts with chain characters in the follow set,
    # a chain over multi-byte characters, a chain that ends in a loop
    r'"([^"\\\x00-\x1f]|\\["\\/bfnrt]){0,5}"',
    r'"([^"\\\x00-\x1f]|\\["\\/bfnrt]){3,9}"',
    r'[a-z ,]{12}',
    r'[^!"\x00-\x1f]{0,4}!',
    r'[0-9]{2,}x',
]


def lexeme_of(pattern: str) -> Lexeme:
    nfa = build_nfa(parse_regex(pattern))
    nullable, nonempty, first = analyze(nfa)
    assert nonempty
    return Lexeme(ir.Literal(pattern), nfa, Limits(), first, nullable)


def run_entries(scans: ScanCache, run) -> tuple[set, set]:
    if run.inside_row is not None:
        bits = np.unpackbits(run.inside_row.view(np.uint8), bitorder="little")
        inside = set(np.flatnonzero(bits).tolist())
    else:
        inside = set(run.inside_ids.tolist())
    child = set()
    if run.child is not None:
        scope = scans.scopes[run.child]
        child = set(zip(scope.positions.tolist(), scope.offsets.tolist()))
    return inside, child


# a key trie with several branches: first-byte groups too small for tails, two-byte
# prefixes leaving the trie for one "any other key" state (tails at offset 2)
TRIE = r'"([^"abcdefgh]|a[^"b]|b[^"c]|c[^"d]|d[^"e]|e[^"f]|f[^"g]|g[^"h]|h[^"a])[^"]*"'
FOLLOWS = (",} ]", ':"a')
# forced literals (literal_runs.py): a property key lexeme, a keyword that may go on;
# two follow sets on one cache: tails are shared across follows
LITERALS = [r'"properties": ?', r'null|nullable', r'"\$schema":[ ]{0,2}']


def follow_sets() -> list[np.ndarray]:
    """bool [256] follow sets, one per FOLLOWS string."""
    follows = []
    for chars in FOLLOWS:
        follow = np.zeros(256, dtype=bool)
        follow[[ord(c) for c in chars]] = True
        follows.append(follow)
    return follows
