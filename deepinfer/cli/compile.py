"""`deepinfer compile --schema|--regex|--grammar ...`: show what the compiler makes of a constraint.

Prints the IR as EBNF, the automaton's state counts, the compile time, any
annotations (keywords not enforced, sound approximations, checks left to the matcher) and any unknown keywords
(typos, vendor extensions: no draft defines them, so nothing enforces them). A constraint that does not
compile exits with status 2 and the compiler's message (JSON pointer or
grammar line/column).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from deepinfer.cli.constraint_args import add_constraint_arguments, load_grammar, load_regex, load_schema
from deepinfer.cli.schema_keywords import unknown_keywords


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_constraint_arguments(parser, required=True)
    parser.add_argument("--model", default=None,
                        help="model directory or .gguf whose vocabulary to compile against "
                             "(default: $DEEPINFER_MODEL_DIR, else the default model)")
    parser.add_argument("--json", action="store_true", help="print a JSON report instead of text")
    parser.add_argument("--no-ebnf", action="store_true", help="omit the IR listing")


def compile_from_args(args, compiler):
    """(compiled constraint, label, seconds, unknown keywords) for the constraint named by the arguments."""
    start = time.perf_counter()
    unknown: list[str] = []
    if args.schema:
        schema, label = load_schema(args.schema)
        compiled = compiler.compile_json_schema(schema)
        unknown = unknown_keywords(schema)
    elif args.regex:
        pattern, label = load_regex(args.regex)
        compiled = compiler.compile_regex(pattern)
    else:
        text, syntax, label = load_grammar(args.grammar, args.syntax)
        compiled = compiler.compile_grammar(text, syntax=syntax)
    return compiled, label, time.perf_counter() - start, unknown


def automaton_counts(compiled) -> dict:
    """State counts of the automaton: the DFA for regular constraints, lexemes and
    productions (with the lexemes' DFA states) for context-free ones."""
    automaton = getattr(compiled, "automaton", None)
    bnf = getattr(automaton, "bnf", None)
    if bnf is None:
        return {}
    return {"cfg_productions": len(bnf.productions), "cfg_lexemes": len(bnf.lexemes),
            "cfg_lexeme_dfa_states": sum(len(lex.trans) for lex in bnf.lexemes)}


def report(compiled, label: str, seconds: float, unknown: list[str] = ()) -> dict:
    stats = {**(getattr(compiled, "stats", {}) or {}), **automaton_counts(compiled)}
    return {"source": label, "kind": compiled.kind, "compile_seconds": round(seconds, 6),
            "stats": stats, "annotations": list(compiled.annotations), "unknown_keywords": list(unknown),
            "rules": len(compiled.grammar.rules), "ebnf": str(compiled.grammar)}


def run(args: argparse.Namespace) -> int:
    from deepinfer.constraints import GENERATION_JSON_OPTIONS, GrammarCompiler, Vocabulary
    from deepinfer.model.hub import resolve_model

    vocab = Vocabulary.from_pretrained(resolve_model(args.model))
    # what generation compiles (the engine's options), so the verdict is the server's
    compiler = GrammarCompiler(vocab, json_options=GENERATION_JSON_OPTIONS)
    compiled, label, seconds, unknown = compile_from_args(args, compiler)
    info = report(compiled, label, seconds, unknown)
    if args.json:
        json.dump(info, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    out = sys.stdout
    out.write(f"source:       {info['source']} ({info['kind']})\n")
    out.write(f"compile time: {seconds * 1000:.1f} ms\n")
    out.write(f"rules:        {info['rules']}\n")
    for key, value in sorted(info["stats"].items()):
        shown = f"{value * 1000:.1f} ms" if key.endswith("_s") else value
        out.write(f"{key + ':':13} {shown}\n")
    if info["annotations"]:
        out.write("annotations (keywords not enforced, sound approximations, checks left to the matcher):\n")
        for note in info["annotations"]:
            out.write(f"  - {note}\n")
    else:
        out.write("annotations:  none (everything is enforced)\n")
    if info["unknown_keywords"]:
        out.write("unknown keywords (no JSON Schema draft defines them; ignored):\n")
        for pointer in info["unknown_keywords"]:
            out.write(f"  - {pointer}\n")
    if not args.no_ebnf:
        out.write("\n" + info["ebnf"] + "\n")
    return 0
