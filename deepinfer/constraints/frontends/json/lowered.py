"""A JSON Schema made ready for the compiler: its two lowerings, the lowering time, the trackers.

Owns `lower_for_compiler(schema, **options) -> LoweredSchema`, which
GrammarCompiler.compile_json_schema calls before it builds the automaton (backends.py in
the compiler's package). The schema is lowered once with one rule per sub-schema
(`split=True`: what the context-free back end takes) and handed over also without the
split's dead alternatives (`unsplit`: as regular as the plain lowering, what one DFA is
built from). What no automaton checks becomes a `Tracker` the compiler wraps the built
automaton in: `uniqueItems` left to the matcher (unique_tracker.UniqueItemsAutomaton) and
long `maxLength`s (caps.py, length_caps.LengthCapAutomaton). A lowering slow enough that
building its automaton would run into a caller's timeout fails closed here. Knows the IR
and its own trackers; not the back ends, the compiler or tokens.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from deepinfer.constraints import ir
from deepinfer.constraints.automaton import TokenAutomaton
from deepinfer.constraints.errors import ConstraintError

from .arrays import UNIQUE_NOTE
from .caps import CAP_NOTE, CapPolicy, capped_nodes, has_long_max_length
from .jsonschema_import import import_wall_s, lowering_clock
from .length_caps import LengthCapAutomaton
from .lowerer import LOWER_TIME_BUDGET_S
from .schema import load_schema, lower_json_schema, unsplit
from .unique import UniquePolicy
from .unique_tracker import UniqueItemsAutomaton

FIRST_LOWERING_MAX_S = 2.0  # the slowest passing MaskBench schemas lower in < 1 s


@dataclass(frozen=True)
class Tracker:
    """A check no automaton makes, kept by a wrapper around the built one."""

    wrap: Callable[[TokenAutomaton, object], TokenAutomaton]  # (automaton, policy) -> tracked automaton
    policy: object

    def apply(self, automaton: TokenAutomaton) -> TokenAutomaton:
        return self.wrap(automaton, self.policy)


@dataclass
class LoweredSchema:
    """What the compiler builds a schema's automaton from."""

    grammar: ir.Grammar        # one rule per `$ref` target and merge; regular unless the schema recurses
    split: ir.Grammar          # the same language, every sub-schema its own non-regular rule (`sources` set)
    trackers: list[Tracker]    # wrapped around the built automaton in this order (the last outermost)
    lower_s: float             # wall seconds the lowering took


def lower_for_compiler(schema, **options) -> LoweredSchema:
    """Lower a schema (dict, JSON text or Pydantic model class) for GrammarCompiler; options
    as for `lower_json_schema` (`whitespace`, `strict`, ...)."""
    t0, cpu0, imported0 = time.perf_counter(), lowering_clock(), import_wall_s()
    root = load_schema(schema)
    caps = _length_caps(root)
    options = {"unique_matcher": True, "length_caps": caps, "deadline": cpu0 + LOWER_TIME_BUDGET_S,
               **options}
    # lowered once, split: the context-free back end takes it as it is, the DFA path without
    # its dead alternatives (most schemas are recursive through additionalProperties' values)
    split = lower_json_schema(schema, split=True, **options)
    grammar = unsplit(split)
    lowering_cpu = lowering_clock() - cpu0
    lower_s = time.perf_counter() - t0 - (import_wall_s() - imported0)  # less a first jsonschema import
    if lowering_cpu > FIRST_LOWERING_MAX_S:
        # back ends take several times as long as lowering on such grammars: fail now, not time out
        raise ConstraintError(f"JSON Schema too complex: lowering alone took {lowering_cpu:.1f} s of CPU")
    return LoweredSchema(grammar, split, _trackers(grammar.annotations, root, caps), lower_s)


def _trackers(annotations: list[str], root, caps: frozenset) -> list[Tracker]:
    """The wrappers the lowering asked for (in its annotations): length caps inside, then unique items."""
    trackers = []
    if any(note.startswith(CAP_NOTE) for note in annotations):
        trackers.append(Tracker(LengthCapAutomaton, CapPolicy(root, caps)))
    if any(note.startswith(UNIQUE_NOTE) for note in annotations):
        trackers.append(Tracker(UniqueItemsAutomaton, UniquePolicy(root)))
    return trackers


def _length_caps(root) -> frozenset:
    """caps.capped_nodes, or none when the schema is too malformed to walk (the lowering
    then reports what is wrong; without caps every maxLength is in the grammar, as before)."""
    if not has_long_max_length(root):
        return frozenset()
    try:
        return frozenset(capped_nodes(root))
    except Exception:  # noqa: BLE001 - any failure here only means "no caps"
        return frozenset()
