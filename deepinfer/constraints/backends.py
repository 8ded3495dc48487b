"""Which back end builds a grammar, and how a lowered JSON Schema is built.

`build_automaton(grammar, vocab, limits)`: a recursive grammar goes to the context-free
back end (`cfg.build_automaton`), any other is inlined into one minimized byte DFA
(the regular back end's RegularAutomaton).

`build_schema(lowered, vocab, limits)` builds the JSON Schema front end's LoweredSchema.
A small regular grammar (DFA_FIRST_MAX_NFA_STATES) becomes one DFA: a few ms to build,
the fastest masks. A recursive or larger one goes to the context-free back end as the
split grammar, whose lexemes are shared between schemas and built on first use (where
one DFA took 8-30 ms for a typical function-call schema of 700-2000 NFA states); if that
back end meets a limit on a regular grammar of up to SINGLE_DFA_MAX_NFA_STATES, one DFA
may still fit. A limit met either way is reported naming the first scalar sub-schema
that is too large on its own (ir.Grammar.sources), when one is. The front end's trackers
then wrap the automaton. Knows the IR, the back ends' entry points and what the front
end hands over, not how either side works inside.
"""

from __future__ import annotations

import time

from . import cfg, ir
from . import deadline as compile_deadline
from .automaton import TokenAutomaton
from .errors import ConstraintError, Reason
from .frontends.json.lowered import LoweredSchema
from .regular.facts import FactsCache
from .regular.automaton import RegularAutomaton
from .regular.dfa import Limits, budget_clock, determinize_expr
from .regular.nfa import build_nfa
from .vocab import Vocabulary

DFA_FIRST_MAX_NFA_STATES = 400
SINGLE_DFA_MAX_NFA_STATES = 30_000  # one DFA, if the context-free back end refuses a regular grammar
LOCATE_BUDGET_S = 3.0  # CPU spent finding which sub-schema made a refused automaton too large


def build_automaton(grammar: ir.Grammar, vocab: Vocabulary, limits: Limits) -> TokenAutomaton:
    """IR -> TokenAutomaton: context-free back end for a recursive grammar, else one DFA."""
    if ir.is_recursive(grammar):
        return cfg.build_automaton(grammar, vocab, limits)
    return RegularAutomaton(determinize_expr(grammar, limits), vocab)


def build_schema(lowered: LoweredSchema, vocab: Vocabulary, limits: Limits) -> tuple[TokenAutomaton, dict]:
    """(automaton, stats) of a lowered JSON Schema; stats: `lower_s`, `build_s`, `back_end`
    ("dfa" or "cfg") and, for one DFA, `dfa_states`."""
    started = time.perf_counter()
    compile_deadline.set_stage("building its automaton")
    grammar, split = lowered.grammar, lowered.split
    regular = not ir.is_recursive(grammar)
    states = nfa_states(grammar) if regular else None
    automaton = None
    if regular and states <= DFA_FIRST_MAX_NFA_STATES:
        automaton = _one_dfa(grammar, vocab, limits)
    if automaton is None:
        try:
            try:
                automaton = build_automaton(split, vocab, limits)
            except ConstraintError as exc:  # many lexemes too many: one DFA may still do
                if not (regular and states <= SINGLE_DFA_MAX_NFA_STATES and exc.limit):
                    raise
                automaton = build_automaton(grammar, vocab, limits)
        except ConstraintError as exc:
            if exc.limit:
                raise _located(split.sources, limits, exc) from None
            raise
    dfa = getattr(automaton, "dfa", None)
    for tracker in lowered.trackers:
        automaton = tracker.apply(automaton)
    stats = {"lower_s": lowered.lower_s, "build_s": time.perf_counter() - started,
             "back_end": "dfa" if dfa is not None else "cfg"}
    if dfa is not None:
        stats["dfa_states"] = dfa.num_states
    return automaton, stats


def nfa_states(grammar: ir.Grammar) -> int:
    """The NFA size of a regular grammar, from the IR (regular/facts.py; exact)."""
    try:
        return FactsCache(grammar.rules).of(ir.RuleRef(grammar.start)).states
    except KeyError:  # an undefined rule: the NFA build reports it
        return len(build_nfa(grammar).eps)


def _one_dfa(grammar: ir.Grammar, vocab: Vocabulary, limits: Limits) -> TokenAutomaton | None:
    """The grammar as one DFA, or None when that is too large."""
    try:
        return build_automaton(grammar, vocab, limits)
    except ConstraintError as exc:
        if not exc.limit:
            raise
        return None


def _located(sources, limits: Limits, exc: ConstraintError) -> ConstraintError:
    """The back end's limit error, naming the first scalar sub-schema that is too large on its
    own (its pointer and size-prone keywords), when one is; else `exc` as it is. Only on the
    failure path: each candidate's DFA is built again, within LOCATE_BUDGET_S of CPU."""
    deadline = budget_clock() + LOCATE_BUDGET_S
    for ptr, keywords, expr in sources:
        left = deadline - budget_clock()
        if left <= 0:
            break
        try:
            determinize_expr(expr, Limits(limits.max_nfa_states, limits.max_dfa_states, left))
        except ConstraintError as inner:
            if inner.limit:
                where = f"{ptr.rstrip('/')}/{keywords.strip('`')}" if "," not in keywords else ptr
                verb = "makes" if "," not in keywords else "make"
                return ConstraintError(f"JSON Schema {where}: {keywords} {verb} this value's automaton "
                                       f"too large to build ({inner})", Reason.LIMIT)
        except (KeyError, RecursionError):  # refers to other rules: not a scalar on its own
            continue
    return exc
