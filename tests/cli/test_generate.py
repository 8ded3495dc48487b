"""`deepinfer generate`: greedy output equals transformers', sampling is seeded, errors are one paragraph."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from deepinfer.cli import main
from deepinfer.testing import make_tiny_model_dir

PROMPT = "Name three prime numbers."


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return make_tiny_model_dir(tmp_path_factory.mktemp("cli-tiny"))


def run_cli(capsys, *args):
    code = main(["generate", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def transformers_greedy(directory, messages, max_new_tokens):
    """transformers' greedy reply for the chat-templated messages, as text."""
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(directory))
    model = transformers.AutoModelForCausalLM.from_pretrained(str(directory), dtype=torch.float32)
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                        return_dict=True, return_tensors="pt")["input_ids"]
    generation = transformers.GenerationConfig.from_pretrained(str(directory))
    output = model.generate(ids, do_sample=False, max_new_tokens=max_new_tokens,
                            generation_config=generation, attention_mask=torch.ones_like(ids))
    return tokenizer.decode(output[0, ids.shape[1]:], skip_special_tokens=True)


def test_greedy_matches_transformers_on_tiny_model(tiny_dir, capsys):
    code, out, _ = run_cli(capsys, PROMPT, "--model", str(tiny_dir), "--max-tokens", "24",
                           "--system", "Be brief.")
    assert code == 0
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": PROMPT}]
    assert out == transformers_greedy(tiny_dir, messages, 24) + "\n"


def test_gguf_file_and_its_converted_directory_reply_the_same(tiny_dir, tmp_path, capsys):
    from deepinfer.model.gguf import read_gguf, write_hf_directory
    from deepinfer.testing import make_tiny_gguf

    gguf_path = make_tiny_gguf(tiny_dir, tmp_path / "tiny.gguf", "Q8_0")
    converted = write_hf_directory(read_gguf(gguf_path), tmp_path / "converted")
    replies = [run_cli(capsys, PROMPT, "--model", str(path), "--max-tokens", "12")
               for path in (gguf_path, converted)]
    assert replies[0][0] == 0 and replies[0][1] == replies[1][1]


def test_sampling_is_reproducible_with_a_seed(tiny_dir, capsys):
    args = (PROMPT, "--model", str(tiny_dir), "--max-tokens", "16", "--temperature", "1.0")
    first = run_cli(capsys, *args, "--seed", "7")[1]
    assert run_cli(capsys, *args, "--seed", "7")[1] == first
    others = {run_cli(capsys, *args, "--seed", str(seed))[1] for seed in (8, 9)}
    assert others != {first}


def test_bfloat16_runs(tiny_dir, capsys):
    code, out, _ = run_cli(capsys, PROMPT, "--model", str(tiny_dir), "--max-tokens", "4", "--dtype", "bfloat16")
    assert code == 0 and out.endswith("\n")


def test_stats_go_to_stderr(tiny_dir, capsys):
    code, out, err = run_cli(capsys, PROMPT, "--model", str(tiny_dir), "--max-tokens", "4", "--stats")
    assert code == 0 and "tokens/s" in err and "tokens/s" not in out


def run_process(*args, env=None):
    return subprocess.run([sys.executable, "-m", "deepinfer", "generate", *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def assert_one_paragraph_error(result, *needles):
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    # Progress bars (first use) may precede the error; the error itself is one line, the last.
    message = result.stderr.strip().replace("\r", "\n").splitlines()[-1]
    assert message.startswith("deepinfer: error:")
    assert result.stderr.count("deepinfer: error:") == 1
    for needle in needles:
        assert needle in message


def test_missing_model_path(tmp_path):
    missing = tmp_path / "no-such-model"
    assert_one_paragraph_error(run_process("hi", "--model", str(missing)), str(missing))


def test_corrupt_gguf(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + os.urandom(200))
    assert_one_paragraph_error(run_process("hi", "--model", str(bad)), str(bad), "corrupt")


def assert_user_error_in_process(capsys, args, *needles):
    code, _, err = run_cli(capsys, *args)
    message = err.strip().replace("\r", "\n").splitlines()[-1]
    assert code == 2 and message.startswith("deepinfer: error:")
    for needle in needles:
        assert needle in message


def test_missing_config_field(tmp_path, tiny_dir, capsys):
    import json
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(tiny_dir, broken)
    config = json.loads((broken / "config.json").read_text())
    del config["hidden_size"]
    (broken / "config.json").write_text(json.dumps(config))
    assert_user_error_in_process(capsys, ["hi", "--model", str(broken)], "hidden_size")


def test_no_network_no_cache(tmp_path, monkeypatch, capsys):
    for name, value in {"DEEPINFER_CACHE_DIR": str(tmp_path / "cache"), "DEEPINFER_MODEL_DIR": "",
                        "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_NO_CACHE_DIR": "1",
                        "PIP_RETRIES": "0"}.items():
        monkeypatch.setenv(name, value)
    assert_user_error_in_process(capsys, ["hi"], "DEEPINFER_MODEL_DIR", "--model", "network")


def test_bad_option_values(capsys, tiny_dir):
    for args in (["--max-tokens", "0"], ["--temperature", "-1"], ["--dtype", "float64"]):
        with pytest.raises(SystemExit) as info:
            main(["generate", "hi", "--model", str(tiny_dir), *args])
        assert info.value.code == 2
    capsys.readouterr()


@pytest.mark.slow
def test_greedy_matches_transformers_on_default_model(capsys):
    from deepinfer.testing import default_model_dir_or_skip

    directory = default_model_dir_or_skip(allow_download=True)
    code, out, _ = run_cli(capsys, PROMPT, "--model", str(directory), "--max-tokens", "64")
    assert code == 0
    expected = transformers_greedy(directory, [{"role": "user", "content": PROMPT}], 64)
    assert out == expected + "\n"
    assert len(expected) > 20  # a real reply, not an immediate stop
