"""Soundness on MaskBench's real-world schemas and their valid/invalid instances.

The cases live outside the repository (../shared/maskbench/data, or the folder
named by $MASKBENCH_DATA); the tests skip without them. Default suite: a fixed
subset checked with the reference IR matcher, plus a few schemas through the
real compiler and Matcher on the DeepSeek-V4 vocabulary. Marked slow: all 500
cases. Not one invalid instance may be accepted; a schema that does not
compile is fine (fail closed), a rejected valid instance is reported.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from deepinfer.constraints import ConstraintError, Matcher, allocate_token_bitmask
from deepinfer.constraints.frontends.json.match import matches
from deepinfer.constraints.frontends.json.schema import lower_json_schema

DATA = Path(os.environ.get("MASKBENCH_DATA", Path(__file__).resolve().parents[3] / "shared" / "maskbench" / "data"))
ALL = sorted(p.name for p in DATA.glob("*.json")) if DATA.is_dir() else []
FAST = ALL[::25]  # 20 cases spread over the sources
MATCHER_CASES = ["BFCL_java_20.json", "Glaiveai2K---generate_invoice_67a84e80.json",
                 "WashingtonPost---wp_82_Normalized.json", "Synthesized---draft2019_09_valid_maxItems_id3.json"]
pytestmark = pytest.mark.skipif(not ALL, reason=f"MaskBench cases not found at {DATA}")


def _case(name: str) -> dict:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _check_ir(name: str) -> list[str]:
    case = _case(name)
    try:
        grammar = lower_json_schema(case["schema"])
    except ConstraintError:
        return []
    rejected = []
    for test in case["tests"]:
        text = json.dumps(test["data"], indent=None, ensure_ascii=False)
        accepted = matches(grammar, text)
        assert not (accepted and not test["valid"]), f"{name}: invalid instance accepted: {text[:300]}"
        if test["valid"] and not accepted:
            rejected.append(text)
    return rejected


@pytest.mark.parametrize("name", FAST)
def test_maskbench_subset_is_sound(name):
    _check_ir(name)


@pytest.mark.slow
def test_maskbench_all_sound_and_mostly_complete():
    rejected = {name: r for name in ALL if (r := _check_ir(name))}
    assert len(rejected) <= 15, sorted(rejected)


@pytest.mark.parametrize("name", [n for n in MATCHER_CASES if n in ALL])
def test_real_matcher_on_maskbench(name, deepseek_compiler, deepseek_tokenizer):
    case = _case(name)
    compiled = deepseek_compiler.compile_json_schema(case["schema"])
    vocab = deepseek_compiler.vocab
    bitmask = allocate_token_bitmask(1, vocab.size)
    row = bitmask.numpy()[0]
    eos = min(vocab.eos_ids)
    for test in case["tests"]:
        text = json.dumps(test["data"], indent=None, ensure_ascii=False)
        m, accepted = Matcher(compiled), True
        for tok in deepseek_tokenizer.encode(text, add_special_tokens=False).ids:
            m.fill_next_token_bitmask(bitmask, 0)
            if not (int(row[tok >> 5]) >> (tok & 31)) & 1 or not m.accept_token(tok):
                accepted = False
                break
        if accepted:
            m.fill_next_token_bitmask(bitmask, 0)
            accepted = bool((int(row[eos >> 5]) >> (eos & 31)) & 1)
        assert accepted == test["valid"], f"{name}: {text[:200]}"
