"""`deepinfer generate` runs through the engine: its streamed reply is the library's, length and
context limits hold, and the KV pool is sized for the one request."""

from __future__ import annotations

import re

import pytest

from deepinfer.cli import main
from deepinfer.cli.generate import build_messages, kv_blocks_for
from deepinfer.engine import LLM
from deepinfer.testing import make_tiny_model_dir
from deepinfer.types import SamplingParams


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return make_tiny_model_dir(tmp_path_factory.mktemp("cli-engine"))


def test_the_streamed_reply_is_the_library_reply(tiny_dir, capsys):
    args = ["generate", "Count to five.", "--model", str(tiny_dir), "--max-tokens", "20",
            "--temperature", "0.9", "--seed", "11", "--stats"]
    assert main(args) == 0
    captured = capsys.readouterr()
    llm = LLM(str(tiny_dir))
    prompt = llm.tokenizer.apply_chat_template(build_messages("Count to five.", None), add_generation_prompt=True)
    [expected] = llm.generate(prompt, SamplingParams(max_tokens=20, temperature=0.9, seed=11))
    assert captured.out == expected.outputs[0].text + "\n"
    found = re.search(r"generated (\d+) tokens, finished by (\w+)", captured.err)
    assert found, captured.err
    assert int(found.group(1)) == len(expected.outputs[0].token_ids)
    assert found.group(2) == expected.outputs[0].finish_reason.value


def test_max_tokens_ends_the_reply(tiny_dir, capsys):
    assert main(["generate", "hi", "--model", str(tiny_dir), "--max-tokens", "3", "--stats"]) == 0
    err = capsys.readouterr().err
    found = re.search(r"generated (\d+) tokens, finished by (\w+)", err)
    assert found, err
    count, reason = int(found.group(1)), found.group(2)
    assert (count, reason) == (3, "length") or (count <= 3 and reason == "stop")


def test_a_prompt_longer_than_the_context_is_a_user_error(tiny_dir, capsys):
    code = main(["generate", "word " * 1200, "--model", str(tiny_dir)])
    err = capsys.readouterr().err
    assert code == 2 and "context" in err and "Traceback" not in err


def test_kv_blocks_cover_prompt_and_reply_within_the_context():
    assert kv_blocks_for(10, 6, 1024, 16) == 2           # 16 tokens: one block, one spare
    assert kv_blocks_for(10, 7, 1024, 16) == 3
    assert kv_blocks_for(1000, 256, 1024, 16) == 65      # never more than the context holds
