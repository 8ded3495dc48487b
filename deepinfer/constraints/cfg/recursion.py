"""Recursion in an IR grammar: which rules are non-regular, and tail-recursion unrolling.

Owns the reachability analysis that decides which rules must stay BNF
nonterminals (recursive ones and those reaching them; the rest are regular and
become lexemes) and the Arden's-lemma rewrite that turns regular tail recursion
into a starred prefix. Used by the lexical split (lexemes.py); knows nothing
about lexemes, automata, tokens or parsing.
"""

from __future__ import annotations

from .. import ir


def nonregular_rules(grammar: ir.Grammar) -> set[str]:
    """Rules that are recursive or reach a recursive rule."""
    direct = {name: grammar.referenced_rules(name) for name in grammar.rules}  # one walk each
    reach: dict[str, set[str]] = {}
    for name in grammar.rules:
        seen, todo = set(), [name]
        while todo:
            for ref in direct.get(todo.pop(), ()):
                if ref not in seen:
                    seen.add(ref)
                    todo.append(ref)
        reach[name] = seen
    recursive = {n for n in grammar.rules if n in reach[n]}
    return {n for n in grammar.rules if n in recursive or reach[n] & recursive}


def unroll_tail_recursion(grammar: ir.Grammar) -> ir.Grammar:
    """Rewrite `A ::= R1 A | ... | B1 | ...` (Ri regular, so free of A) as
    `A ::= (R1 | ...)* (B1 | ...)`: the same language (Arden's lemma; the least
    solution of A = R A | B(A) is R* B(A) even when B mentions A).

    Why: unary operators (`"-" unary`, `NOT negation`) otherwise make a token
    like "--------" cross one lexeme boundary per character, each an Earley
    step; as a starred prefix the whole run is a single lexeme.
    """
    return unroll(grammar, nonregular_rules(grammar))


def unroll(grammar: ir.Grammar, nonregular: set[str]) -> ir.Grammar:
    """unroll_tail_recursion given `nonregular_rules(grammar)` (the caller has it already)."""
    rules = dict(grammar.rules)
    changed = False
    for name, body in grammar.rules.items():
        if name not in nonregular:
            continue
        me = ir.RuleRef(name)
        recursive, base = [], []
        for branch in body.items if isinstance(body, ir.Alt) else (body,):
            items = branch.items if isinstance(branch, ir.Seq) else (branch,)
            prefix = ir.seq(*items[:-1]) if len(items) > 1 and items[-1] == me else None
            if prefix is not None and not _mentions(prefix, nonregular):
                recursive.append(prefix)
            else:  # may mention A anywhere: A = R A | B(A) still gives A = R* B(A)
                base.append(branch)
        if recursive and base:
            rules[name] = ir.seq(ir.repeat(ir.alt(*recursive)), ir.alt(*base))
            changed = True
    if not changed:  # the same object keeps its memo of referenced rules (walks of every body)
        return grammar
    out = ir.Grammar(rules, grammar.start, list(grammar.annotations))
    out._refs.update(grammar._refs)  # entries are checked against the body object on use
    return out


def _mentions(expr: ir.Expr, names: set[str]) -> bool:
    return bool(ir.rule_refs(expr) & names)
