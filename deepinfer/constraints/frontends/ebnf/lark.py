"""The lark EBNF front end: a lark grammar text -> IR.

Owns lark's grammar language as lark itself parses it (we reuse lark's own
grammar-file parser for the syntax tree, so positions and syntax errors match
lark's), and its meaning for generation: a sentence is a string the rules
derive with terminals expanded in place; `%ignore`d terminals may appear
before any terminal of a rule and at the end (inserted explicitly in the IR);
terminals are atomic (nothing is ignored inside them). Knows nothing about
automata or tokenizers.

Supported: rules, terminals, `|`, grouping, `[..]`, `?`, `*`, `+`, `~ n`,
`~ n..m`, string literals with escapes and the `i` flag, `"a".."z"` ranges,
`/regex/` with flags `i` and `s`, `%import common.NAME` (also `-> ALIAS` and
`common (A, B)`), `%ignore`, `%override`, `%extend`, priorities, aliases and
rule modifiers (which do not change the language). Templates, `%declare`,
relative imports and other regex flags raise ConstraintError naming the
feature with its line and column.
"""

from __future__ import annotations

from lark import Token, Tree
from lark.exceptions import GrammarError, UnexpectedInput
from lark.load_grammar import _get_parser, _literal_to_pattern, eval_escaping

from ... import ir
from ...errors import ConstraintError
from .checks import SourceMap, check_grammar, prune_unreachable
from .lark_common import common_terminals
from .lark_flags import case_insensitive, dot_all
from ..regex import parse_regex

IGNORE_RULE = "__IGNORE"
ROOT_RULE = "__ROOT"



def lower_lark(text: str, start: str = "start") -> ir.Grammar:
    """Lower a lark grammar; `start` names the start rule."""
    module = _Module(text, "grammar")
    module.load()
    rules, source = module.rules, module.source
    if start not in rules or start[0].isupper():
        names = ", ".join(n for n in rules if not n[0].isupper()) or "none"
        raise ConstraintError(f"start rule {start!r} is not defined (rules: {names})")
    grammar_start = start
    if module.ignore:
        rules[IGNORE_RULE] = ir.alt(*(ir.RuleRef(n) for n in module.ignore))
        rules[ROOT_RULE] = ir.seq(ir.RuleRef(start), ir.repeat(ir.RuleRef(IGNORE_RULE)))
        grammar_start = ROOT_RULE
        source.definitions.setdefault(ROOT_RULE, source.definitions[start])
    grammar = ir.Grammar(rules, grammar_start)
    check_grammar(grammar, source, start)
    return prune_unreachable(grammar)


def _pos(node) -> tuple[int, int]:
    """(line, column) of a token or of the first token inside a tree."""
    if isinstance(node, Token):
        return node.line or 0, node.column or 0
    for child in node.children:
        pos = _pos(child)
        if pos != (0, 0):
            return pos
    return 0, 0


def _error(node, what: str) -> ConstraintError:
    line, col = _pos(node)
    return ConstraintError(f"lark grammar line {line} column {col}: {what}")


class _Module:
    """One grammar text: its definitions lowered to IR rules (terminals too)."""

    def __init__(self, text: str, label: str, predefined: dict[str, ir.Expr] | None = None) -> None:
        self.predefined = predefined or {}
        self.text = text
        self.label = label
        self.rules: dict[str, ir.Expr] = {}
        self.source = SourceMap()
        self.ignore: list[str] = []
        self.term_names: set[str] = set()
        self.has_ignore = False

    def load(self) -> None:
        try:
            tree = _get_parser().parse(self.text + "\n", "start")
        except UnexpectedInput as exc:
            token = getattr(exc, "token", None)
            got = f"unexpected {str(token)!r}" if token is not None else "unexpected character"
            raise ConstraintError(f"lark grammar line {exc.line} column {exc.column}: syntax "
                                  f"error, {got}") from None
        self.has_ignore = any(stmt.data == "ignore" for stmt in tree.children)
        for stmt in tree.children:
            if stmt.data == "import":
                self._import(stmt)
        for stmt in tree.children:
            kind = stmt.data
            if kind in ("rule", "term"):
                self._define(stmt, override=False)
            elif kind == "override":
                self._define(stmt.children[0], override=True)
            elif kind == "extend":
                self._extend(stmt.children[0])
            elif kind == "ignore":
                self._add_ignore(stmt.children[0])
            elif kind == "declare":
                raise _error(stmt, "unsupported lark feature: %declare (a terminal with no "
                                   "definition cannot be generated)")

    # ------------------------------------------------------------ statements
    def _head(self, stmt: Tree) -> tuple[Token, Tree]:
        if stmt.data == "rule":
            _mods, name, params, _prio, body = stmt.children
            if params.children:
                raise _error(name, f"unsupported lark feature: template rule {name}{{...}}")
            return name, body
        return stmt.children[0], stmt.children[-1]

    def _define(self, stmt: Tree, override: bool) -> None:
        name, body = self._head(stmt)
        if name in self.rules and not override:
            raise _error(name, f"{name} is defined more than once")
        if override and name not in self.rules:
            raise _error(name, f"%override of {name}, which is not defined")
        is_term = stmt.data == "term"
        if is_term:
            self.term_names.add(str(name))
        if str(name) in self.predefined:
            self.rules[str(name)] = self.predefined[str(name)]
        else:
            self.rules[str(name)] = self._lower(body, in_rule=not is_term)
        self.source.definitions.setdefault(str(name), _pos(name))

    def _extend(self, stmt: Tree) -> None:
        name, body = self._head(stmt)
        if name not in self.rules:
            raise _error(name, f"%extend of {name}, which is not defined")
        self.rules[str(name)] = ir.alt(self.rules[str(name)],
                                       self._lower(body, in_rule=stmt.data == "rule"))

    def _add_ignore(self, body: Tree) -> None:
        name = f"__IGNORED_{len(self.ignore)}"
        expr = self._lower(body, in_rule=False)
        if isinstance(expr, ir.RuleRef) and expr.name in self.term_names:
            name = expr.name
        else:
            self.rules[name] = expr
            self.source.definitions[name] = _pos(body)
        self.ignore.append(name)

    def _import(self, stmt: Tree) -> None:
        path_node = stmt.children[0]
        if path_node.data == "import_rel":
            raise _error(stmt, "unsupported lark feature: relative %import")
        parts = [str(t) for t in path_node.children]
        if len(stmt.children) > 1 and isinstance(stmt.children[1], Tree):  # common (A, B)
            module, names = parts, [(str(t), str(t)) for t in stmt.children[1].children]
        else:
            module = parts[:-1]
            alias = str(stmt.children[1]) if len(stmt.children) > 1 else parts[-1]
            names = [(parts[-1], alias)]
        if module != ["common"]:
            raise _error(stmt, f"unsupported lark feature: %import {'.'.join(parts)} (only "
                               "%import common.NAME is available)")
        common = common_terminals(_Module)
        for name, alias in names:
            if name not in common:
                raise _error(stmt, f"common.lark has no terminal {name}")
            if alias in self.rules:
                raise _error(stmt, f"{alias} is defined more than once")
            self.rules[alias] = common[name]
            self.term_names.add(alias)
            self.source.definitions[alias] = _pos(stmt)

    # ------------------------------------------------------------ expressions
    def _lower(self, node, in_rule: bool) -> ir.Expr:
        """Lower an expansion tree; in rules, each terminal gets ignorable prefix."""
        if isinstance(node, Token):
            raise _error(node, f"unexpected {node!r}")
        kind = node.data
        if kind == "expansions":
            return ir.alt(*(self._lower(c, in_rule) for c in node.children))
        if kind == "alias":
            return self._lower(node.children[0], in_rule)
        if kind == "expansion":
            return ir.seq(*(self._lower(c, in_rule) for c in node.children))
        if kind == "maybe":
            return ir.optional(self._lower(node.children[0], in_rule))
        if kind == "expr":
            return self._repeat(node, in_rule)
        if kind == "value":
            return self._value(node.children[0], in_rule)
        raise _error(node, f"unsupported lark construct {kind!r}")

    def _repeat(self, node: Tree, in_rule: bool) -> ir.Expr:
        atom, op, *nums = node.children
        item = self._lower(atom, in_rule)
        if op.type == "OP":
            lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[str(op)]
        else:  # ~ n  or  ~ n..m
            lo = int(nums[0])
            hi = int(nums[1]) if len(nums) > 1 else lo
            if hi < lo:
                raise _error(op, f"repetition ~ {lo}..{hi} has its bounds reversed")
        return ir.repeat(item, lo, hi)

    def _value(self, node: Tree, in_rule: bool) -> ir.Expr:
        kind = node.data
        if kind == "template_usage":
            raise _error(node, "unsupported lark feature: template usage")
        if kind in ("terminal", "nonterminal"):
            token = node.children[0]
            self.source.references.setdefault(str(token), _pos(token))
            ref = ir.RuleRef(str(token))
            if kind == "nonterminal" and not in_rule:
                raise _error(token, f"terminal definitions cannot use rule {token}")
            return self._ignorable(ref) if kind == "terminal" and in_rule else ref
        if kind == "literal":
            expr = self._literal(node.children[0])
        elif kind == "range":
            expr = self._range(*node.children)
        else:
            raise _error(node, f"unsupported lark construct {kind!r}")
        return self._ignorable(expr) if in_rule else expr

    def _ignorable(self, terminal: ir.Expr) -> ir.Expr:
        return ir.seq(ir.repeat(ir.RuleRef(IGNORE_RULE)), terminal) if self.has_ignore else terminal


    def _literal(self, token: Token) -> ir.Expr:
        try:
            pattern = _literal_to_pattern(token)
        except (GrammarError, AssertionError, ValueError) as exc:
            raise _error(token, f"bad literal {token}: {exc}") from None
        flags = set(pattern.flags)
        if token.type == "STRING":
            lone = ir.first_surrogate(pattern.value)
            if lone is not None:  # no UTF-8 text holds it
                raise _error(token, f"literal {token}: U+{ord(lone):04X} is not a Unicode scalar value")
            return case_insensitive(ir.literal(pattern.value)) if "i" in flags else ir.literal(pattern.value)
        unsupported = sorted(flags - {"i", "s"})
        if unsupported:
            raise _error(token, f"unsupported lark feature: regex flag {unsupported[0]!r} in {token}")
        source = dot_all(pattern.value) if "s" in flags else pattern.value
        try:
            expr = parse_regex(source)
        except ConstraintError as exc:
            raise _error(token, str(exc)) from None
        return case_insensitive(expr) if "i" in flags else expr

    def _range(self, lo: Token, hi: Token) -> ir.Expr:
        a, b = eval_escaping(lo[1:-1]), eval_escaping(hi[1:-1])
        if len(a) != 1 or len(b) != 1:
            raise _error(lo, f"range {lo}..{hi} must be between single characters")
        return ir.CharClass.of([(ord(a), ord(b))])
