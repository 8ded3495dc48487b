"""JSON Schema -> CompiledConstraint: the back-end choice for the JSON Schema front end.

Owns `compile_json_schema(compiler, schema, **options)` (GrammarCompiler calls it through
json_schema): lower once with one rule per sub-schema, build one DFA for a small regular
grammar, otherwise give the split grammar to the context-free back end; wrap the automaton
in `constraints.unique.UniqueItemsAutomaton` when `uniqueItems` is left to the matcher and in
`constraints.length_caps.LengthCapAutomaton` when long `maxLength`s are (json_caps); and
fail closed (ConstraintError) rather than run into a caller's timeout on schemas whose
lowering alone is slow. Knows the IR and the compiler's public pieces, not tokens.
"""

from __future__ import annotations

import sys
import time

from deepinfer.constraints.regular.dfa import budget_clock
from deepinfer.constraints.errors import ConstraintError

from . import arrays as json_arrays
from .caps import CAP_NOTE, CapPolicy, capped_nodes, has_long_max_length

# A regular grammar this small becomes one DFA (a few ms to build; fastest masks). Larger ones
# go to the context-free back end too: its lexemes are shared between schemas and built on
# first use, where one DFA took 8-30 ms for a typical function-call schema (700-2000 NFA states).
DFA_FIRST_MAX_NFA_STATES = 400
SINGLE_DFA_MAX_NFA_STATES = 30_000  # one DFA, if the context-free back end refuses a regular grammar
LOCATE_BUDGET_S = 3.0  # CPU spent finding which sub-schema made a refused automaton too large
FIRST_LOWERING_MAX_S = 2.0  # the slowest passing MaskBench schemas lower in < 1 s


def compile_json_schema(compiler, schema, **options):
    """GrammarCompiler's back-end choice for JSON Schema (called by compile_json_schema).

    A small regular grammar becomes one DFA (fastest masks). A recursive or larger
    one goes to the context-free back end with every sub-schema in its own rule
    (`split=True`), so that back end compiles many small lexeme DFAs (shared when equal,
    e.g. forty `maxLength: 256` strings) instead of one huge automaton.
    """
    from deepinfer.constraints.compiler import CompiledConstraint, is_recursive
    from deepinfer.constraints.regular.nfa import build_nfa

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))  # back ends walk expression trees recursively
    try:
        return _compile(compiler, schema, options, CompiledConstraint, is_recursive, build_nfa)
    except RecursionError:
        raise ConstraintError("JSON Schema nests too deeply to compile") from None
    finally:
        sys.setrecursionlimit(limit)


def _compile(compiler, schema, options, CompiledConstraint, is_recursive, build_nfa):
    from .lowerer import LOWER_TIME_BUDGET_S
    from .schema import load_schema, lower_json_schema, unsplit

    _warm_jsonschema()
    t0, cpu0 = time.perf_counter(), budget_clock()
    root = load_schema(schema)
    caps = _length_caps(root)
    options = {"unique_matcher": True, "length_caps": caps, "deadline": cpu0 + LOWER_TIME_BUDGET_S,
               **options}
    # lowered once, split: the context-free back end takes it as it is, the DFA path without
    # its dead alternatives (most schemas are recursive through additionalProperties' values)
    split = lower_json_schema(schema, split=True, **options)
    grammar = unsplit(split)
    t1, lowering_cpu = time.perf_counter(), budget_clock() - cpu0
    if lowering_cpu > FIRST_LOWERING_MAX_S:
        # back ends take several times as long as lowering on such grammars: fail now, not time out
        raise ConstraintError(f"JSON Schema too complex: lowering alone took {lowering_cpu:.1f} s of CPU")
    regular = not is_recursive(grammar)
    states = _nfa_states(grammar, build_nfa) if regular else None
    automaton = None
    if regular and states <= DFA_FIRST_MAX_NFA_STATES:
        automaton = _one_dfa(compiler, grammar)
    if automaton is None:
        try:
            try:
                automaton = compiler.build_automaton(split)
            except ConstraintError as exc:  # many lexemes too many: one DFA may still do
                if not (regular and states <= SINGLE_DFA_MAX_NFA_STATES and _too_big(exc)):
                    raise
                automaton = compiler.build_automaton(grammar)
        except ConstraintError as exc:
            if _too_big(exc):
                raise _located(compiler, split.sources, exc) from None
            raise
    dfa = getattr(automaton, "dfa", None)
    if any(note.startswith(CAP_NOTE) for note in grammar.annotations):
        from deepinfer.constraints.frontends.json.length_caps import LengthCapAutomaton

        automaton = LengthCapAutomaton(automaton, CapPolicy(root, caps))
    if any(note.startswith(json_arrays.UNIQUE_NOTE) for note in grammar.annotations):
        from deepinfer.constraints.frontends.json.unique_tracker import UniqueItemsAutomaton

        from .unique import UniquePolicy

        automaton = UniqueItemsAutomaton(automaton, UniquePolicy(root))
    stats = {"lower_s": t1 - t0, "build_s": time.perf_counter() - t1,
             "back_end": "dfa" if dfa is not None else "cfg"}
    if dfa is not None:
        stats["dfa_states"] = dfa.num_states
    return CompiledConstraint("json_schema", grammar, automaton, compiler.vocab, stats)


def _length_caps(root) -> frozenset:
    """json_caps.capped_nodes, or none when the schema is too malformed to walk (the lowering
    then reports what is wrong; without caps every maxLength is in the grammar, as before)."""
    if not has_long_max_length(root):
        return frozenset()
    try:
        return frozenset(capped_nodes(root))
    except Exception:  # noqa: BLE001 - any failure here only means "no caps"
        return frozenset()


def _nfa_states(grammar, build_nfa) -> int:
    """The NFA size of a regular grammar, from the IR (ir_facts; exact)."""
    from deepinfer.constraints import ir
    from deepinfer.constraints.ir.facts import FactsCache

    try:
        return FactsCache(grammar.rules).of(ir.RuleRef(grammar.start)).states
    except KeyError:  # an undefined rule: the NFA build reports it
        return len(build_nfa(grammar).eps)


def _one_dfa(compiler, grammar):
    """The grammar as one DFA, or None when that is too large."""
    try:
        return compiler.build_automaton(grammar)
    except ConstraintError as exc:
        if not _too_big(exc):
            raise
        return None


def _located(compiler, sources, exc: ConstraintError) -> ConstraintError:
    """The back end's size error, naming the first scalar sub-schema that is too large on its
    own (its pointer and size-prone keywords), when one is; else `exc` as it is. Only on the
    failure path: each candidate's DFA is built again, within LOCATE_BUDGET_S of CPU."""
    from deepinfer.constraints.regular.dfa import Limits, determinize_expr

    deadline = budget_clock() + LOCATE_BUDGET_S
    for ptr, keywords, expr in sources:
        left = deadline - budget_clock()
        if left <= 0:
            break
        limits = Limits(compiler.limits.max_nfa_states, compiler.limits.max_dfa_states, left)
        try:
            determinize_expr(expr, limits)
        except ConstraintError as inner:
            if _too_big(inner):
                where = f"{ptr.rstrip('/')}/{keywords.strip('`')}" if "," not in keywords else ptr
                verb = "makes" if "," not in keywords else "make"
                return ConstraintError(f"JSON Schema {where}: {keywords} {verb} this value's automaton "
                                       f"too large to build ({inner})")
        except (KeyError, RecursionError):  # refers to other rules: not a scalar on its own
            continue
    return exc


def _too_big(exc: ConstraintError) -> bool:
    return "too large" in str(exc) or "too complex" in str(exc)


def _warm_jsonschema() -> None:
    """Import jsonschema's format checkers (seconds, once per process) outside the lowering clock,
    then take that static heap out of later full GC passes (gcpause.freeze_once)."""
    import jsonschema

    from deepinfer.constraints.regular.gcpause import freeze_once

    jsonschema.Draft202012Validator.FORMAT_CHECKER  # noqa: B018 - the import is the point
    freeze_once()
