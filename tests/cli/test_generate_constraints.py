"""`deepinfer generate --schema/--regex/--grammar`: the reply obeys the constraint (tiny model)."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from deepinfer.cli import main


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from deepinfer.testing import make_tiny_model_dir
    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


def generate(capsys, *args):
    code = main(["generate", "Say something.", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_regex(model_dir, capsys):
    code, out, _ = generate(capsys, "--model", str(model_dir), "--regex", "[0-9]{3}-[0-9]{4}", "--seed", "1",
                            "--temperature", "1")
    assert code == 0 and re.fullmatch(r"[0-9]{3}-[0-9]{4}\n", out)


def test_schema_file(model_dir, tmp_path, capsys):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
              "additionalProperties": False}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(schema))
    code, out, _ = generate(capsys, "--model", str(model_dir), "--schema", str(path), "--max-tokens", "60")
    assert code == 0
    jsonschema.validate(json.loads(out), schema)


def test_grammar_file_and_syntax(model_dir, tmp_path, capsys):
    path = tmp_path / "g.txt"
    path.write_text('root ::= ("yes" | "no") "!"\n')
    code, out, _ = generate(capsys, "--model", str(model_dir), "--grammar", str(path), "--syntax", "gbnf")
    assert code == 0 and out in ("yes!\n", "no!\n")


def test_bad_grammar_is_a_clear_error(model_dir, tmp_path, capsys):
    path = tmp_path / "bad.lark"
    path.write_text('start: "a" nope\n')
    code, _, err = generate(capsys, "--model", str(model_dir), "--grammar", str(path))
    assert code == 2 and "undefined rule 'nope'" in err and "line 1" in err


def test_stats_with_a_constraint(model_dir, capsys):
    assert main(["generate", "x", "--model", str(model_dir), "--regex", "[0-9]{3}", "--stats"]) == 0
    captured = capsys.readouterr()
    assert re.fullmatch(r"[0-9]{3}", captured.out.strip())
    found = re.search(r"generated (\d+) tokens \(constrained\)", captured.err)
    assert found and 1 <= int(found.group(1)) <= 4, captured.err  # 3 digits (a token may hold several), + EOS
