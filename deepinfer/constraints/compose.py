"""Compose one grammar from several constraints, in the IR.

Tool calls (`tool_choice: "auto"` or forced), structural tags and "an answer
or a tool call" each need one constraint made of pieces: free text that never
contains a trigger string, JSON Schemas, regexes, grammars and fixed strings.
Every piece is lowered by its own front end into an `ir.Grammar`, the pieces'
rules are renamed apart and joined under one start rule, and the result is an
`ir.Grammar` for `GrammarCompiler.compile_ir`; no grammar text is printed and
parsed again on the way.

A JSON Schema piece is lowered with the options `GrammarCompiler.compile_json_schema`
uses for the same schema given alone (strict, the caller's whitespace mode), so a
tool's arguments follow exactly the language that schema has as `response_format`.
Two checks the compiler leaves to trackers around the automaton of a lone schema
(`uniqueItems` over unbounded item sets, very long `maxLength` strings) cannot wrap
a piece of a larger grammar: the first fails closed here (ConstraintError naming
the keyword), the second is enforced by the grammar itself.

Knows the IR and the front ends' entry points; nothing about tokens, requests or
any wire protocol.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from deepinfer.constraints import ir
from deepinfer.constraints.errors import ConstraintError
from deepinfer.constraints.frontends.ebnf import lower_grammar
from deepinfer.constraints.frontends.json.schema import lower_json_schema
from deepinfer.constraints.frontends.regex import lower_regex

# ------------------------------------------------------------------ pieces


def json_schema(schema, whitespace: str | None = None) -> ir.Grammar:
    """A JSON Schema as a piece: the language `compile_json_schema(schema, whitespace=...)` accepts."""
    options = {} if whitespace is None else {"whitespace": whitespace}
    return lower_json_schema(schema, **options)


def regex(pattern: str) -> ir.Grammar:
    return lower_regex(pattern)


def ebnf(text: str, syntax: str = "lark") -> ir.Grammar:
    return lower_grammar(text, syntax)


def lower(kind: str, value, syntax: str = "lark", whitespace: str | None = None) -> ir.Grammar:
    """One constraint of `kind` "json_schema", "regex", "grammar" or "ir" (a grammar composed
    already, taken as it is) as a piece (raises ConstraintError)."""
    if kind == "ir":
        if not isinstance(value, ir.Grammar):
            raise ConstraintError(f"an 'ir' constraint must be an ir.Grammar, not {type(value).__name__}")
        return value
    if kind == "json_schema":
        return json_schema(value, whitespace)
    if kind == "regex":
        return regex(value)
    if kind == "grammar":
        return ebnf(value, syntax)
    raise ConstraintError(f"unknown constraint kind {kind!r}: expected json_schema, regex, grammar or ir")


# ------------------------------------------------------------------ joining


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
    """Collects the renamed rules of several grammars; `grammar(root)` is the whole."""

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

    def grammar(self, root: ir.Expr) -> ir.Grammar:
        return ir.Grammar({"root": root, **self.rules}, start="root", annotations=list(self.annotations))


# ------------------------------------------------------------------ text that avoids triggers

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
    return ir.CharClass.of([r for p in parts for r in p.ranges])


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


# ------------------------------------------------------------------ tool calls


@dataclass(frozen=True)
class CallFormat:
    """How calls are spelled: `prefix {"name": N, "arguments": A} suffix`, joined by `separator`."""

    trigger: str  # what starts a call inside free text ("" when the output is only calls)
    prefix: str
    suffix: str
    separator: str


# The Hermes/Qwen format ChatML templates teach, for calls the model may make or not.
HERMES = CallFormat(trigger="<tool_call>", prefix="<tool_call>\n", suffix="\n</tool_call>", separator="\n")
# A forced call needs no opener to tell it from text: a bare JSON object (fewer tokens); several
# calls (parallel) are a JSON array of them, which models close readily after the last call.
BARE = CallFormat(trigger="", prefix="", suffix="", separator=",")


def call_format(forced: bool) -> CallFormat:
    return BARE if forced else HERMES


@dataclass(frozen=True)
class ToolArguments:
    """A tool by name, with its arguments' grammar (`json_schema(parameters, whitespace)`)."""

    name: str
    arguments: ir.Grammar


def tool_calls(tools: list[ToolArguments], *, forced: bool, parallel: bool, answer: ir.Grammar | None = None,
               whitespace: str | None = None) -> ir.Grammar:
    """The output when tools may (`forced=False`) or must be called.

    Not forced: free text that never contains the opener, optionally followed by
    calls; or, given an `answer` grammar, that answer or the calls. Forced: one bare
    call object, or with `parallel` a JSON array of one or more. `whitespace` is the
    JSON whitespace mode of the call objects' own punctuation.
    """
    if not tools:
        raise ConstraintError("a tool-call grammar needs at least one tool")
    fmt = call_format(forced)
    comp = Composer()
    gap = "" if whitespace == "compact" else " "
    calls = []
    for i, tool in enumerate(tools):
        args = comp.add(tool.arguments, f"t{i}")
        head = f'{fmt.prefix}{{"name":{gap}{json.dumps(tool.name)},{gap}"arguments":{gap}'
        calls.append(ir.seq(ir.literal(head), args, ir.literal("}" + fmt.suffix)))
    call = comp.rule("call", ir.alt(*calls))
    many = _repeated_calls(call, fmt) if parallel else call
    if forced:
        root = many
    elif answer is None:
        root = ir.seq(comp.rule("text", text_without([fmt.trigger])), ir.optional(many))
    else:
        root = ir.alt(comp.add(answer, "answer"), many)
    return comp.grammar(root)


def _repeated_calls(call: ir.Expr, fmt: CallFormat) -> ir.Expr:
    if fmt.trigger:
        return ir.seq(call, ir.repeat(ir.seq(ir.literal(fmt.separator), call)))
    more = ir.repeat(ir.seq(ir.literal(fmt.separator), ir.optional(ir.literal(" ")), call))
    return ir.seq(ir.literal("["), call, more, ir.literal("]"))


# ------------------------------------------------------------------ structural tags


@dataclass(frozen=True)
class TaggedStructure:
    """`begin`, a value of `body`'s language, `end`; `begin` starts with one of the triggers."""

    begin: str
    body: ir.Grammar
    end: str


def triggered_tags(structures: list[TaggedStructure], triggers: list[str], *, at_least_one: bool = False,
                   stop_after_first: bool = False) -> ir.Grammar:
    """Free text in which every occurrence of a trigger starts one of the structures.

    `at_least_one`: the output holds a structure; `stop_after_first`: it ends after
    the first one (xgrammar's `triggered_tags` options).
    """
    if not structures or not triggers:
        raise ConstraintError("triggered tags need at least one structure and one trigger")
    if any(t == "" for t in triggers):
        raise ConstraintError("triggers must not be empty strings")
    comp = Composer()
    bodies = []
    for i, tag in enumerate(structures):
        if not any(tag.begin.startswith(t) for t in triggers):
            raise ConstraintError(f"structure {i}: begin {tag.begin!r} does not start with any trigger, "
                                  "so it could never be generated")
        body = comp.add(tag.body, f"s{i}")
        bodies.append(ir.seq(ir.literal(tag.begin), body, ir.literal(tag.end)))
    text = comp.rule("text", text_without(triggers))
    tagged = comp.rule("tagged", ir.alt(*bodies))
    if stop_after_first:  # one structure at most (exactly one with at_least_one), then the output ends
        root = ir.seq(text, tagged) if at_least_one else ir.seq(text, ir.optional(tagged))
    else:
        root = ir.seq(text, ir.repeat(ir.seq(tagged, text), 1 if at_least_one else 0))
    return comp.grammar(root)


__all__ = ["BARE", "HERMES", "CallFormat", "Composer", "TaggedStructure", "ToolArguments", "call_format", "ebnf",
           "json_schema", "lower", "regex", "rename", "text_without", "tool_calls", "triggered_tags"]
