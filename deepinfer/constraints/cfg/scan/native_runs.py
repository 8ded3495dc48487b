"""The parts of a ScanCache run computed with the compiled token-trie walks (native_walks.py).

A key-trie node still takes its loop state's cached run for the first bytes it shares with it
(ref_runs.py), a counting chain its cached row (chain_runs.py); every other walk, the root's and a
child scope's, is one compiled walk. Split out of scan.py, which calls `native_parts` when the
kernel builds (else its numpy walks). Knows nothing about parsing.
"""

from __future__ import annotations

import numpy as np

from .chain_runs import chain_split, may_chain
from .ref_runs import reference_part, reference_state
from .walks import live_keys
from .tails import SPLIT_MIN

ROOT = 0


def native_parts(scans, trie, trans, accepting, state, scope_id, follow, tail_key, inside, hit_idx,
                 hit_off):
    """Append the run's inside positions and crossings (scan.ScanCache._compute's lists);
    return the base row (int32 [words], read-only) to OR in, or None."""
    base_row, found = None, None
    if scope_id != ROOT:
        scope = scans.scopes[scope_id]
        found = trie.walk_entries(trans, accepting, follow, state, scope.positions, scope.offsets)
    elif (ref := reference_state(trans, state)) is not None:
        g, same = ref
        base_row = reference_part(scans, scans.run(tail_key[0], trans, accepting, g, ROOT, tail_key[1]),
                                  same, trans[g] >= 0, hit_idx, hit_off)
        found = trie.walk(trans, accepting, follow, state, (trans[state] >= 0) & ~same)
    else:
        split = None
        if may_chain(trans, accepting, state):
            live = live_keys(trans, accepting, state, follow)
            split = None if live is None else chain_split(scans, trans, accepting, state, follow, live,
                                                          SPLIT_MIN)
        if split is not None:
            base_row = split[0]
            found = trie.walk_entries(trans, accepting, follow, state, split[1], np.zeros_like(split[1]))
        else:
            found = trie.walk(trans, accepting, follow, state, trans[state] >= 0,
                              scans._loops(trans.reshape(-1, 256), accepting, follow))
    if found[0].size:
        inside.append(found[0])
    if found[1].size:
        hit_idx.append(found[1])
        hit_off.append(found[2])
    return base_row
