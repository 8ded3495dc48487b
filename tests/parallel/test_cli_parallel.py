"""`deepinfer generate` over several processes: same reply as one process; bad combinations refused."""

from __future__ import annotations

import pytest

from deepinfer.cli import main
from deepinfer.testing import make_tiny_model_dir


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return make_tiny_model_dir(tmp_path_factory.mktemp("cli-pd"))


def generate(capsys, *args):
    code = main(["generate", "Name three prime numbers.", "--max-tokens", "8", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("flags, message", [
    (["--prefill-workers", "2", "--decode-workers", "1"], "only one prefill and one decode worker"),
    (["--expert-parallel", "2", "--prefill-workers", "1", "--decode-workers", "1"], "cannot be combined"),
    (["--expert-parallel", "2", "--temperature", "0.7"], "generates greedily"),
])
def test_unsupported_combinations_are_one_paragraph_errors(capsys, tiny_dir, flags, message):
    code, out, err = generate(capsys, "--model", str(tiny_dir), *flags)
    assert code == 2 and message in err and out == ""


@pytest.mark.slow
def test_disaggregated_reply_equals_the_single_process_reply(capsys, tiny_dir):
    single = generate(capsys, "--model", str(tiny_dir), "--temperature", "0.8", "--seed", "3")
    split = generate(capsys, "--model", str(tiny_dir), "--temperature", "0.8", "--seed", "3",
                     "--prefill-workers", "1", "--decode-workers", "1")
    assert single[0] == split[0] == 0 and single[1] == split[1]


@pytest.mark.slow
def test_expert_parallel_reply_equals_the_single_process_reply(capsys, deepseek_dir):
    single = generate(capsys, "--model", str(deepseek_dir))
    split = generate(capsys, "--model", str(deepseek_dir), "--expert-parallel", "2")
    assert single[0] == split[0] == 0 and single[1] == split[1]
