"""Split a recursive IR grammar into lexemes (regular pieces) and BNF productions.

Owns the decision of what is lexical: every maximal regular sub-expression of
a non-regular rule (one that contains no reference to a recursive rule)
becomes one lexeme with its own byte DFA (built by the core's nfa/dfa
modules); what remains is a plain BNF over lexemes and nonterminals for the
Earley parser. Lexemes never match the empty string: a nullable regular piece
becomes `N ::= ε | L+`. Which rules are non-regular (and the tail-recursion
unrolling done first) is recursion.py's. Knows nothing about tokens or parsing.

Symbols: nonterminals are ints >= 0, lexeme i is the int -(i + 1).
"""

from __future__ import annotations


from dataclasses import dataclass


from .. import ir
from .. import deadline as compile_deadline
from ..regular.dfa import Limits, budget_clock
from ..errors import ConstraintError, Reason
from ..regular.facts import FactsCache
from ..regular.nfa import build_nfa
from .scan import lexeme_cache
from .lexeme import EAGER_NFA_STATES, Lexeme, analyze
from .composed import split_parts
from .recursion import nonregular_rules, unroll

START = 0  # the augmented start nonterminal S' -> start


@dataclass
class Bnf:
    """Productions over nonterminals (ints >= 0) and lexemes (ints < 0)."""

    names: list[str]                               # nonterminal names, for debugging
    productions: list[tuple[int, tuple[int, ...]]]  # (lhs, rhs)
    lexemes: list[Lexeme]


def lex_symbol(index: int) -> int:
    return -(index + 1)


def lexeme_index(symbol: int) -> int:
    return -symbol - 1


def split_grammar(grammar: ir.Grammar, limits: Limits | None = None) -> Bnf:
    nonregular = nonregular_rules(grammar)
    unrolled = unroll(grammar, nonregular)
    if unrolled is not grammar:  # unrolling may leave a rule no longer recursive
        nonregular = nonregular_rules(unrolled)
    return _Splitter(unrolled, limits or Limits(), nonregular).run()


class _Splitter:
    def __init__(self, grammar: ir.Grammar, limits: Limits, nonregular: set[str]) -> None:
        self.grammar = grammar
        self.limits = limits
        self.nonregular = nonregular  # nonregular_rules(grammar), computed once by the caller
        self.regular_rules = {n: b for n, b in grammar.rules.items() if n not in self.nonregular}
        self.facts = FactsCache(self.regular_rules)
        self.names: list[str] = ["<start>"]
        self.productions: list[tuple[int, tuple[int, ...]]] = []
        self.lexemes: list[Lexeme] = []
        self.lexeme_ids: dict[ir.Expr, int] = {}
        self.rule_ids: dict[str, int] = {}
        self.helper_ids: dict[tuple, int] = {}
        self.deadline = budget_clock() + limits.time_budget_s

    def run(self) -> Bnf:
        start = self.grammar.start
        if start in self.nonregular:
            self.productions.append((START, (self.rule_symbol(start),)))
        else:
            self.productions.append((START, self.sequence(ir.RuleRef(start))))
        todo = list(self.rule_ids)
        done: set[str] = set()
        while todo:
            name = todo.pop()
            if name in done:
                continue
            done.add(name)
            lhs = self.rule_ids[name]
            body = self.grammar.rules[name]
            branches = body.items if isinstance(body, ir.Alt) and not self.is_regular(body) else (body,)
            self.add_alternatives(lhs, branches)
            todo.extend(n for n in self.rule_ids if n not in done)
        return Bnf(self.names, _prune_unproductive(self.productions, len(self.names)), self.lexemes)

    # ------------------------------------------------------------ structure
    def is_regular(self, expr: ir.Expr) -> bool:
        """No reference to a non-regular rule inside (ir.rule_refs is kept on each node: O(1))."""
        return not (ir.rule_refs(expr) & self.nonregular)

    def new_nonterminal(self, name: str) -> int:
        self.names.append(name)
        return len(self.names) - 1

    def rule_symbol(self, name: str) -> int:
        if name not in self.rule_ids:
            self.rule_ids[name] = self.new_nonterminal(name)
        return self.rule_ids[name]

    def add_alternatives(self, lhs: int, branches) -> None:
        regular = [b for b in branches if self.is_regular(b)]
        if regular:  # all regular branches share one lexeme
            self.productions.append((lhs, self.sequence(ir.alt(*regular))))
        for branch in branches:
            if not self.is_regular(branch):
                self.productions.append((lhs, self.sequence(branch)))

    def sequence(self, expr: ir.Expr) -> tuple[int, ...]:
        """Symbols for `expr`: maximal regular runs become lexemes."""
        if self.is_regular(expr):
            return self.regular_piece(expr)
        if isinstance(expr, ir.Seq):
            out: list[int] = []
            run: list[ir.Expr] = []
            for item in expr.items:
                if self.is_regular(item):
                    run.append(item)
                    continue
                if run:
                    out.extend(self.regular_piece(ir.seq(*run)))
                    run = []
                out.extend(self.sequence(item))
            if run:
                out.extend(self.regular_piece(ir.seq(*run)))
            return tuple(out)
        if isinstance(expr, ir.RuleRef):
            return (self.rule_symbol(expr.name),)
        if isinstance(expr, ir.Alt):
            return (self.helper(("alt", expr), lambda lhs: self.add_alternatives(lhs, expr.items)),)
        if isinstance(expr, ir.Repeat):
            return (self.repeat(expr),)
        raise TypeError(f"not an IR expression: {expr!r}")

    def helper(self, key: tuple, fill) -> int:
        nt = self.helper_ids.get(key)
        if nt is None:
            nt = self.helper_ids[key] = self.new_nonterminal(f"<{key[0]} {len(self.helper_ids)}>")
            fill(nt)
        return nt

    def repeat(self, expr: ir.Repeat) -> int:
        def fill(lhs: int) -> None:
            item = self.sequence(expr.item)
            if expr.max is None:  # R ::= item{min} | R item   (left recursion suits Earley)
                self.productions.append((lhs, item * expr.min))
                self.productions.append((lhs, (lhs,) + item))
                return
            tail = self.optional_chain(item, expr.max - expr.min)
            self.productions.append((lhs, item * expr.min + tail))
        return self.helper(("repeat", expr), fill)

    def optional_chain(self, item: tuple[int, ...], count: int) -> tuple[int, ...]:
        """Symbols for item{0,count} as nested optionals (x (x (x)?)?)?."""
        if count == 0:
            return ()
        nt = self.new_nonterminal(f"<opt {count}>")
        self.productions.append((nt, ()))
        self.productions.append((nt, item + self.optional_chain(item, count - 1)))
        return (nt,)

    # ------------------------------------------------------------- lexemes
    def regular_piece(self, expr: ir.Expr) -> tuple[int, ...]:
        """A regular expression as symbols: (), (L,), or (N,) with N ::= ε | L+."""
        if expr == ir.EMPTY:
            return ()
        index, nullable = self.lexeme(expr)
        if index is None:
            return () if nullable else (self.helper(("nothing",), lambda lhs: None),)
        if not nullable:
            return (lex_symbol(index),)
        return (self.helper(("nullable", expr), lambda lhs: (
            self.productions.append((lhs, ())),
            self.productions.append((lhs, (lex_symbol(index),))))),)

    def lexeme(self, expr: ir.Expr) -> tuple[int | None, bool]:
        """(lexeme index of expr minus ε or None if that is empty, expr nullable?)."""
        if expr in self.lexeme_ids:
            return self.lexeme_ids[expr]
        compile_deadline.check()
        if budget_clock() > self.deadline:  # fail closed in bounded time, never hang a caller
            raise ConstraintError(f"grammar too complex: splitting it into lexical pieces took more than "
                                  f"{self.limits.time_budget_s:g} s ({len(self.lexemes)} pieces so far)", Reason.LIMIT)
        key = lexeme_cache.lexeme_key(expr, self.regular_rules, self.limits, self.grammar.referenced_rules)
        cached = lexeme_cache.get(key)
        if cached is None:
            cached = self.new_lexeme(expr, key[1])
            lexeme_cache.put(key, *cached)
        lexeme, nullable = cached
        index = None
        if lexeme is not None:
            index = len(self.lexemes)
            self.lexemes.append(lexeme)
        if len(self.lexemes) > 10_000:
            raise ConstraintError("grammar too large: more than 10000 lexical pieces", Reason.LIMIT)
        self.lexeme_ids[expr] = (index, nullable)
        return index, nullable

    def new_lexeme(self, expr: ir.Expr, refs: tuple) -> tuple[Lexeme | None, bool]:
        """(expr minus ε as a Lexeme, or None if that is empty; expr nullable?).

        A small lexeme (exact NFA size from regular/facts.py) builds nothing now: its NFA and DFA
        come on first use (most lexemes of a schema are not reached by the first masks,
        many never). A big one builds its NFA now (its size limit fails the compile) and
        its DFA too (so DFA limits fail the compile where they could be hit)."""
        try:
            facts = self.facts.of(expr)
        except KeyError:  # an undefined rule: building the NFA reports it
            facts = None
        if facts is not None and facts.states < EAGER_NFA_STATES:
            if not facts.nonempty:
                return None, facts.nullable
            rules = {name: body for name, body in refs if body is not None}
            return Lexeme(expr, None, self.limits, facts.first_bytes(), facts.nullable,
                          rules=rules, size_hint=facts.states), facts.nullable
        if facts is not None and facts.nonempty and not facts.nullable and split_parts(expr):
            # a big key trie behind `,` ws `"`: its DFA is composed from shared parts
            # (composed.py, whose rest build checks the limits), so its whole NFA is not built
            lexeme = Lexeme(expr, None, self.limits, facts.first_bytes(), False, rules={},
                            size_hint=facts.states)
            lexeme.build()
            if lexeme.error:
                raise lexeme.error
            return lexeme, False
        rules = dict(self.regular_rules)
        rules["__lexeme__"] = expr
        nfa = build_nfa(ir.Grammar(rules, "__lexeme__"), self.limits.max_nfa_states)
        nullable, nonempty, first = analyze(nfa)
        if not nonempty:
            return None, nullable
        lexeme = Lexeme(expr, nfa, self.limits, first, nullable)
        lexeme.build()
        if lexeme.error:
            raise lexeme.error
        return lexeme, nullable


def _prune_unproductive(productions, num_nt: int):
    """Drop productions that use a nonterminal deriving nothing (keeps Earley exact)."""
    productive: set[int] = set()
    changed = True
    while changed:
        changed = False
        for lhs, rhs in productions:
            if lhs not in productive and all(s < 0 or s in productive for s in rhs):
                productive.add(lhs)
                changed = True
    if START not in productive:
        raise ConstraintError("the grammar's language is empty")
    return [(lhs, rhs) for lhs, rhs in productions
            if lhs in productive and all(s < 0 or s in productive for s in rhs)]
