"""Compose one grammar from several constraints, through the compiler's public IR.

Tool calls (`tool_choice: "auto"`), `structural_tag` and "an answer or a tool
call" all need one constraint made of pieces: free text that never contains
a trigger string, JSON Schemas, regexes, grammars and fixed tags. Each piece
is lowered with the compiler's own front ends into an `ir.Grammar`, its rules
are renamed apart, and the whole is printed as GBNF text (`str(ir.Grammar)`
is GBNF-compatible), which is what the engine's `SamplingParams.grammar`
accepts. Knows nothing about HTTP or any wire protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deepinfer.constraints import ir


def rename(expr: ir.Expr, names: dict[str, str]) -> ir.Expr:
    """`expr` with every rule reference renamed through `names`."""
    match expr:
        case ir.RuleRef(name):
            return ir.RuleRef(names.get(name, name))
        case ir.Seq(items):
            return ir.Seq(tuple(rename(i, names) for i in items))
        case ir.Alt(items):
            return ir.Alt(tuple(rename(i, names) for i in items))
        case ir.Repeat(item, lo, hi):
            return ir.Repeat(rename(item, names), lo, hi)
    return expr


@dataclass
class Composer:
    """Collects renamed rules from several grammars; `text(root)` prints the whole as GBNF."""

    rules: dict[str, ir.Expr] = field(default_factory=dict)
    annotations: list[str] = field(default_factory=list)

    def add(self, grammar: ir.Grammar, prefix: str) -> ir.Expr:
        """Adds `grammar`'s rules under `prefix`; returns a reference to its start rule."""
        names = {name: f"{prefix}_{name}" for name in grammar.rules}
        for name, body in grammar.rules.items():
            self.rules[names[name]] = rename(body, names)
        self.annotations += grammar.annotations
        return ir.RuleRef(names[grammar.start])

    def rule(self, name: str, body: ir.Expr) -> ir.Expr:
        self.rules[name] = body
        return ir.RuleRef(name)

    def text(self, root: ir.Expr) -> str:
        rules = {"root": root, **self.rules}
        return str(ir.Grammar(rules, start="root")) + "\n"


def lower_json_schema(schema, whitespace: str | None, strict: bool = True) -> ir.Grammar:
    from deepinfer.constraints.frontends.json.schema import lower_json_schema as lower

    options = {} if whitespace is None else {"whitespace": whitespace}
    return lower(schema, strict=strict, **options)


def lower_spec(kind: str, value, syntax: str = "lark", whitespace: str | None = None) -> ir.Grammar:
    """A server ConstraintSpec's (kind, value) as an IR grammar (raises ConstraintError)."""
    if kind == "json_schema":
        return lower_json_schema(value, whitespace)
    if kind == "regex":
        from deepinfer.constraints.frontends.regex import lower_regex
        return lower_regex(value)
    from deepinfer.constraints.frontends.ebnf import lower_grammar
    return lower_grammar(value, syntax)


# ------------------------------------------------------- text that avoids triggers

_ANY = ir.CharClass.any_char()


def text_without(triggers: list[str]) -> ir.Expr:
    """Any text that contains none of `triggers` (a regular language, as one expression).

    Built from the Aho-Corasick automaton of the triggers (every state accepting,
    a completed trigger is dead) by state elimination, deepest states first.
    """
    triggers = [t for t in dict.fromkeys(triggers) if t]
    if not triggers:
        return ir.repeat(_ANY)
    nodes = {"": 0}
    for t in triggers:
        for i in range(1, len(t) + 1):
            nodes.setdefault(t[:i], len(nodes))
    completes = {p for p in nodes if any(p.endswith(t) for t in triggers)}
    alphabet = sorted({ch for t in triggers for ch in t})

    def step(prefix: str, ch: str) -> str:
        s = prefix + ch
        while s not in nodes:  # the longest suffix of s that is a trie node
            s = s[1:]
        return s

    live = [p for p in nodes if p not in completes]
    edges: dict[tuple[str, str], list[ir.Expr]] = {}
    other = ir.CharClass.of([(ord(c), ord(c)) for c in alphabet], negated=True)
    for p in live:
        for ch in alphabet:
            q = step(p, ch)
            if q not in completes:
                edges.setdefault((p, q), []).append(ir.CharClass.of([(ord(ch), ord(ch))]))
        if not other.is_empty():
            edges.setdefault((p, ""), []).append(other)
    return _eliminate(live, {k: _class_union(v) for k, v in edges.items()})


def _class_union(parts: list[ir.Expr]) -> ir.Expr:
    ranges = [r for p in parts for r in p.ranges]
    return ir.CharClass.of(ranges)


def _eliminate(states: list[str], edges: dict[tuple[str, str], ir.Expr]) -> ir.Expr:
    """Regular expression of the paths from "" to any state (all accepting)."""
    start, final = "\x00start", "\x00final"
    edges = dict(edges)
    edges[(start, "")] = ir.EMPTY
    for s in states:
        edges[(s, final)] = ir.EMPTY
    for q in sorted(states, key=len, reverse=True):
        loop = edges.pop((q, q), None)
        star = ir.repeat(loop) if loop is not None else ir.EMPTY
        ins = [(p, e) for (p, r), e in edges.items() if r == q]
        outs = [(r, e) for (p, r), e in edges.items() if p == q]
        for p, _ in ins:
            del edges[(p, q)]
        for r, _ in outs:
            del edges[(q, r)]
        for p, e_in in ins:
            for r, e_out in outs:
                path = ir.seq(e_in, star, e_out)
                old = edges.get((p, r))
                edges[(p, r)] = path if old is None else ir.alt(old, path)
    return edges.get((start, final), ir.NOTHING)


__all__ = ["Composer", "lower_json_schema", "lower_spec", "rename", "text_without"]
