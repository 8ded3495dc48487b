"""Vectorized runs of many tokens through one lexeme DFA, cached per (DFA, state, scope).

A *scope* is a list of entries (token, byte offset into it): the root scope is the whole
vocabulary at offset 0; the child scope of a run holds an entry (token, end) for every
entry of the parent scope for which the lexeme DFA, run from its state, reached an
accepting state at byte `end` with bytes left over (the token crosses a lexeme boundary
there). Equal child scopes share one id. A run of DFA `D` from state `q` over a scope
yields the tokens whose remaining bytes all stay inside `D` (allowed whatever the parser
does next) and the child scope (None if empty). Runs depend on the vocabulary and the
language read from the state only, so they are cached across states, lexemes, requests
and grammars (keyed by the state's reachable sub-DFA, renumbered, when it is small, such
as the `":` ws after every property name, else by the DFA's digest and the state). A root
run picks the cheapest exact strategy: a forced literal by binary search
(literal_runs.py), a counting chain from a cached row (chain_runs.py), a loop shortcut,
or shared tails (tails.py); the numpy byte walks live in scan_walks.py. Where the
compiled kernel builds (native_walks.py), a key-trie node and a counting chain keep
their cached parts and every walk is one compiled walk of the token trie instead. Owns
the scopes, the run cache and keys, and the choice of strategy. Knows nothing about parsing.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass

import numpy as np

from ...regular.mask_bits import pack_mask
from ...regular.masks import _ranges
from .chain_runs import chain_split
from .literal_runs import literal_prefix, literal_walk
from .tails import SPLIT_MIN, root_walk
from ...vocab import Vocabulary
from .few_walks import FEW_TOKENS, walk_scope
from . import native_keys
from .native_runs import native_parts
from .native_walks import TokenTrie
from ..composed import rest_run_key
from .ref_runs import reference_pairs, reference_part, reference_state
from .tables import SIG_LEVELS, ascii_signatures, compact_rows, small_sub_dfa_key, sub_dfa_digest
from .walks import keys_from, live_keys, loop_shortcut, loop_table, walk_offsets, walk_uniform

_keys_from, _live_keys = keys_from, live_keys  # the old names (tests import them from here)

ROOT = 0
SMALL_ROOT = 2_048  # root runs with fewer inside tokens keep ids (a packed row costs more)
SPARSE_PACK = 16  # packed rows of under 1/16 of the vocabulary: from sorted ids (masks.pack_mask)
MAX_ENTRIES = 20_000_000  # scope entries kept per vocabulary (16 bytes each) before a reset
LANGUAGE_STATES = 64  # runs from states reaching at most this many states are keyed by their language
LANGUAGE_DFA = 4_096  # ... in DFAs of at most this many states (compact_rows reads the whole table)


@dataclass
class Scope:
    positions: np.ndarray   # int64 [k] indices into vocab.sorted_*
    offsets: np.ndarray     # int64 [k] bytes already read (< the token's length)


@dataclass
class Run:
    """Result of one (DFA, state, scope) run."""

    inside_row: np.ndarray | None   # int32 [words] packed (big root-scope runs only)
    inside_ids: np.ndarray          # int32 [m] token ids (otherwise)
    child: int | None                      # scope id of the boundary-crossing entries


class ScanCache:
    """Per-vocabulary scopes and runs (shared by every grammar on this vocabulary)."""

    _generations = itertools.count()

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        self.generation = next(ScanCache._generations)  # scope ids are only valid with it
        n = len(vocab.sorted_ids)
        self.ascii_sig, self.non_ascii = ascii_signatures(vocab)
        self.scopes: list[Scope] = [Scope(np.arange(n, dtype=np.int64), np.zeros(n, np.int64))]
        self.runs: dict[tuple, Run] = {}
        self.scope_ids: dict[bytes, int] = {}  # digest of a child scope's entries -> its id
        self.entries = n
        self.loops: dict = {}
        self.char_loops: dict = {}   # chains.Loops per lexeme DFA
        self.chain_rows: dict = {}   # (character set, max characters) -> packed row
        self.single_bytes: dict = {}  # per lexeme DFA: forced bytes (literal_runs.py)
        self.literal_roots: dict = {}  # literal -> (prefix token ids, extended?) (literal_runs.py)
        self.literal_scopes: dict = {}  # (scope id, literal) -> the same, other scopes
        self.literal_index: dict = {}  # scope id -> its entries by remaining bytes (literal_runs.py)
        self.head_literals: dict = {}  # (head digest, head state, scope id, literal) -> the same
        self.tails: dict = {}        # (state_digest, offset) -> tails.Tail
        self.tail_seen: set = set()  # tail keys asked for once (tails._worth)
        self.state_digests: dict = {}  # (trans address, rows, state) -> (digest, trans kept alive)
        self.run_keys: dict = {}     # (DFA digest, state) -> the key of its runs (run_key)
        self.compact: dict = {}      # (trans address, rows) -> (compact_rows of it, trans kept alive)
        self.sub_dfa_numbers: dict = {}  # small_sub_dfa_key tuple -> its number (_small_key)
        self._longer: dict[int, np.ndarray] = {}
        self._sorted_tokens: list[bytes] | None = None
        self._id_positions: np.ndarray | None = None  # int64 [words * 32] (_pack_positions)
        self.follow_ids: dict[bytes, int] = {}
        self.follows: list[np.ndarray] = []
        self.first_byte_rows: dict[int, np.ndarray] = {}  # byte -> packed ids (ref_runs.py)

    def state_digest(self, trans: np.ndarray, accepting: np.ndarray, state: int) -> str:
        """A digest of the language read from `state`: its reachable sub-DFA,
        renumbered breadth first (equal for equal sub-DFAs of any two lexemes;
        lexeme DFAs are minimal, so equal languages give equal sub-DFAs)."""
        key = (trans.ctypes.data, trans.shape[0], state)
        hit = self.state_digests.get(key)
        if hit is None:
            # a small sub-DFA (the "any other key" state of every key trie) is named by its
            # rows, read from the table's cached run lists: no pass over a new trie's table
            small = self._small_key(trans, accepting, state)
            hit = self.state_digests[key] = (small or sub_dfa_digest(trans, accepting, state), trans)
        return hit[0]

    def _small_key(self, trans: np.ndarray, accepting: np.ndarray, state: int):
        """("sub-dfa", n) when the sub-DFA reachable from `state` has at most
        LANGUAGE_STATES states, else None; n numbers that sub-DFA's tuple
        (scan_tables.small_sub_dfa_key) in this cache: equal numbers exactly for equal
        tuples, and run keys hash an int instead of a tuple of ~300 ints per lookup."""
        if trans.shape[0] > LANGUAGE_DFA:
            return None
        if native_keys.available():  # the same key computed in C from the table (native_keys.py)
            sub = native_keys.sub_dfa_key(trans, accepting, state, LANGUAGE_STATES)
        else:
            address = (trans.ctypes.data, trans.shape[0])
            hit = self.compact.get(address)
            if hit is None:
                hit = self.compact[address] = (compact_rows(trans, accepting), trans)  # keep trans alive
            sub = small_sub_dfa_key(hit[0], accepting, state, LANGUAGE_STATES)
        if sub is None:
            return None
        return "sub-dfa", self.sub_dfa_numbers.setdefault(sub, len(self.sub_dfa_numbers))

    def positions_longer_than(self, offset: int) -> np.ndarray:
        """Sorted positions of the tokens of more than `offset` bytes (cached)."""
        got = self._longer.get(offset)
        if got is None:
            got = self._longer[offset] = np.flatnonzero(self.vocab.sorted_lengths > offset).astype(np.int64)
        return got

    def sorted_tokens(self) -> list[bytes]:
        """Token bytes in sorted-position order (for binary searches; built once)."""
        if self._sorted_tokens is None:
            tb = self.vocab.token_bytes
            self._sorted_tokens = [tb[i] for i in self.vocab.sorted_ids.tolist()]
        return self._sorted_tokens

    def follow_id(self, follow: np.ndarray) -> int:
        """A small id for a bool [256] set of bytes that may follow a lexeme."""
        key = follow.tobytes()
        if key not in self.follow_ids:
            self.follow_ids[key] = len(self.follows)
            self.follows.append(follow)
        return self.follow_ids[key]

    def run_key(self, digest: str, trans: np.ndarray, accepting: np.ndarray, state: int):
        """What a run from `state` of the DFA named `digest` depends on: its reachable
        sub-DFA, renumbered, when that is small (the same language in another lexeme,
        such as `":` ws after every property name, or the "any other key" state of every
        key trie, then shares its runs), or the rest's name and state when the state lies in
        the shared rest of a composed lexeme (composed.rest_run_key), else (digest, state)."""
        key = (digest, state)
        got = self.run_keys.get(key)
        if got is None:
            got = self.run_keys[key] = (self._small_key(trans, accepting, state)
                                        or rest_run_key(digest, state) or key)
        return got

    def run(self, digest: str, trans: np.ndarray, accepting: np.ndarray, state: int,
            scope_id: int, follow_id: int) -> Run:
        """Entries of the scope read from `state`; boundary crossings are kept only
        where the next byte is in the follow set `follow_id` (others cannot continue).

        Cached per (language of `state`, scope, follow set): a run reads tokens through
        the sub-DFA reachable from `state` only, so states with equal (renumbered)
        sub-DFAs have equal runs, whatever lexeme they belong to."""
        key = (self.run_key(digest, trans, accepting, state), scope_id, follow_id)
        hit = self.runs.get(key)
        if hit is None:
            hit = self.runs[key] = self._compute(trans, accepting, state, scope_id,
                                                 self.follows[follow_id], (digest, follow_id))
        return hit

    _walk_uniform = walk_uniform    # scan_walks.py, bound as methods
    _walk_offsets = walk_offsets
    _loops = loop_table
    _loop_shortcut = loop_shortcut

    def _compute(self, trans, accepting, state, scope_id, follow, tail_key) -> Run:
        vocab = self.vocab
        mat = vocab.sorted_bytes
        inside: list[np.ndarray] = []
        hit_idx: list[np.ndarray] = []
        hit_off: list[np.ndarray] = []
        base_row = None
        literal = None if scope_id != ROOT else literal_prefix(self, trans, accepting, state,
                                                                            mat.shape[1])
        if literal is not None:  # a forced literal first (literal_runs.py)
            literal_walk(self, trans, accepting, follow, literal[0], literal[1], inside, hit_idx, hit_off)
        elif (trie := TokenTrie.of(self)) is not None:  # compiled walks (native_walks.py)
            base_row = native_parts(self, trie, trans, accepting, state, scope_id, follow, tail_key,
                                    inside, hit_idx, hit_off)
        else:
            base_row = self._compute_numpy(trans, accepting, state, scope_id, follow, tail_key,
                                           inside, hit_idx, hit_off)
        child = None
        if hit_idx and sum(len(h) for h in hit_idx):
            child = self._scope_id(np.concatenate(hit_idx), np.concatenate(hit_off))
        count = sum(len(p) for p in inside)
        if scope_id == ROOT and (base_row is not None or count > SMALL_ROOT):
            if count * SPARSE_PACK < len(vocab.sorted_ids):  # a few tokens on top of a cached row
                row = pack_mask(vocab.sorted_ids.take(np.concatenate(inside)) if inside else _NO_IDS,
                                vocab)
            else:
                row = self._pack_positions(inside)
            if base_row is not None:
                row |= base_row
            row.flags.writeable = False
            return Run(row, np.zeros(0, np.int32), child)
        ids = vocab.sorted_ids[np.concatenate(inside)] if inside else np.zeros(0, np.int32)
        return Run(None, ids.astype(np.int32), child)

    def _scope_id(self, positions: np.ndarray, offsets: np.ndarray) -> int:
        """The id of the scope with these entries, in this order (an existing one if any). Why: the
        counts of a bounded string differ, but the tokens that close it do not, and what is keyed on
        the scope (its runs, item sets' explorations) is reused, not recomputed at each token."""
        key = hashlib.blake2b(positions.tobytes() + offsets.tobytes(), digest_size=16).digest()  # equal lengths
        got = self.scope_ids.get(key)
        if got is None:
            got = self.scope_ids[key] = len(self.scopes)
            self.scopes.append(Scope(positions, offsets))
            self.entries += len(positions)
        return got

    def _compute_numpy(self, trans, accepting, state, scope_id, follow, tail_key, inside, hit_idx,
                       hit_off):
        """The vectorized numpy walks (no compiled kernel here). Returns the base row or None."""
        vocab = self.vocab
        scope = self.scopes[scope_id]
        mat, lengths, flat = vocab.sorted_bytes, vocab.sorted_lengths, trans.reshape(-1)
        base_row = None
        if scope_id == ROOT and (ref := reference_state(trans, state)) is not None:
            # a key-trie node: its loop state's cached run, then the few other first bytes
            g, same = ref
            base_row = reference_part(self, self.run(tail_key[0], trans, accepting, g, ROOT, tail_key[1]),
                                      same, trans[g] >= 0, hit_idx, hit_off)
            keys = keys_from(trans, accepting, state, follow, np.flatnonzero((trans[state] >= 0) & ~same))
            if keys.size:
                keys = reference_pairs(self, trans, accepting, state, g, follow, keys, inside, hit_idx,
                                       hit_off)
            if keys.size:
                root_walk(self, tail_key, trans, accepting, state, follow, keys, inside, hit_idx, hit_off)
        elif scope_id == ROOT:
            live = live_keys(trans, accepting, state, follow)
            split = None if live is None else chain_split(self, trans, accepting, state, follow, live,
                                                          SPLIT_MIN)
            if split is not None:  # a counting chain (chain_runs.py)
                base_row = split[0]
                self._walk_uniform(flat, accepting, follow, split[1], 0, state, inside, hit_idx, hit_off)
            else:
                keys = np.flatnonzero(live) if live is not None else np.zeros(0, np.int64)
                rest, covered = self._loop_shortcut(trans, accepting, state, follow, keys)
                if covered is not None and rest.size < SPLIT_MIN:
                    inside.append(covered)
                    self._walk_uniform(flat, accepting, follow, rest, 0, state, inside, hit_idx, hit_off)
                else:  # shared walks after the first byte (tails.py); exact on its own
                    root_walk(self, tail_key, trans, accepting, state, follow, keys, inside, hit_idx,
                              hit_off)
        elif len(scope.positions) <= FEW_TOKENS:  # a small child scope: byte by byte (few_walks.py)
            walk_scope(self.sorted_tokens(), flat, accepting, follow, scope.positions.tolist(),
                       scope.offsets.tolist(), state, inside, hit_idx, hit_off)
        else:
            offsets = np.flatnonzero(np.bincount(scope.offsets))  # distinct, ascending
            if len(offsets) <= 4:  # few offsets: column-major walks, one per offset
                for j in offsets.tolist():
                    idx = scope.positions[scope.offsets == j]
                    idx = idx[trans[state].take(vocab.sorted_bytes_T[j].take(idx)) >= 0]
                    self._walk_uniform(flat, accepting, follow, idx, j, state, inside, hit_idx, hit_off)
            else:
                ok = trans[state][mat[scope.positions, scope.offsets]] >= 0
                idx, off = scope.positions[ok], scope.offsets[ok]
                cur = np.full(idx.shape, state, dtype=np.int64)
                self._walk_offsets(flat, accepting, follow, idx, off, cur, lengths[idx], inside,
                                   hit_idx, hit_off)
        return base_row

    def _pack_positions(self, pieces: list[np.ndarray]) -> np.ndarray:
        """int32 [words] packed row of the tokens at these sorted positions: a bool per
        position, read in id order (2x faster than gathering ids and scattering bits)."""
        n = len(self.vocab.sorted_ids)
        if self._id_positions is None:  # id -> sorted position; n (always False) if none
            inv = np.full(self.vocab.words * 32, n, dtype=np.int64)
            inv[self.vocab.sorted_ids] = np.arange(n)
            self._id_positions = inv
        hit = np.zeros(n + 1, dtype=bool)
        for p in pieces:
            hit[p] = True
        return np.packbits(hit.take(self._id_positions), bitorder="little").view("<i4").astype(
            np.int32, copy=False)  # may repeat: callers scatter


_NO_IDS = np.zeros(0, dtype=np.int32)
