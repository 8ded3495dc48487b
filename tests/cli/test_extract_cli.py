"""`deepinfer extract` end to end on a tiny random model: inputs in, validated JSONL out."""

from __future__ import annotations

import io
import json

import jsonschema
import pytest

from deepinfer.cli import main

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                           "rating": {"type": "integer", "minimum": 1, "maximum": 5}},
          "required": ["name", "rating"], "additionalProperties": False}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from deepinfer.testing import make_tiny_model_dir
    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture()
def schema_file(tmp_path):
    path = tmp_path / "review.json"
    path.write_text(json.dumps(SCHEMA))
    return path


def test_extract_files_folder_jsonl_and_stdin(model_dir, schema_file, tmp_path, capsys, monkeypatch):
    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "a.txt").write_text("Alice gives it 5 stars.")
    (folder / "b.txt").write_text("Bob: 2/5, meh.")
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps({"id": 1, "text": "Carol loved it"}) + "\n\n" + json.dumps("Dan: awful") + "\n")
    monkeypatch.setattr("sys.stdin", io.StringIO("Eve says four stars"))
    code = main(["extract", "--model", str(model_dir), "--schema", str(schema_file), "--json-whitespace",
                 "compact", "--max-tokens", "48", "--batch-size", "3", "--with-input",
                 str(folder), str(records), "-"])
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["input"] for line in lines] == [str(folder / "a.txt"), str(folder / "b.txt"),
                                                 f"{records}:1", f"{records}:3", "<stdin>"]
    assert code == 0, err
    for line in lines:
        jsonschema.validate(line["output"], SCHEMA)


def test_bare_objects_to_output_file(model_dir, schema_file, tmp_path):
    text = tmp_path / "one.txt"
    text.write_text("Zed rates it 3.")
    out = tmp_path / "out.jsonl"
    assert main(["extract", "--model", str(model_dir), "--schema", str(schema_file), "--json-whitespace",
                 "compact", "--max-tokens", "64", "-o", str(out), str(text)]) == 0
    (obj,) = [json.loads(line) for line in out.read_text().splitlines()]
    jsonschema.validate(obj, SCHEMA)


def test_too_few_tokens_for_any_complete_output_is_status_2(model_dir, schema_file, tmp_path, capsys):
    text = tmp_path / "one.txt"
    text.write_text("x")
    assert main(["extract", "--model", str(model_dir), "--schema", str(schema_file), "--max-tokens", "2",
                 str(text)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "--max-tokens 2: max_tokens 2 cannot hold a complete output" in err
    assert "raise max_tokens to at least" in err


def test_tight_max_tokens_still_gives_complete_valid_outputs(model_dir, schema_file, tmp_path, capsys):
    """A random model under a budget just above the need: every output is closed in time."""
    from deepinfer.constraints import needed_tokens
    from deepinfer.engine import LLM

    schema = json.loads(schema_file.read_text())
    need = needed_tokens(LLM(str(model_dir)).engine.compiler.compile_json_schema(schema))
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for i in range(3):
        (inputs / f"in{i}.txt").write_text(f"input {i}")
    assert main(["extract", "--model", str(model_dir), "--schema", str(schema_file), "--max-tokens",
                 str(need + 8), "--temperature", "1.5", str(inputs)]) == 0
    out, _ = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 3
    for line in lines:
        jsonschema.validate(json.loads(line), schema)


@pytest.mark.parametrize("schema_text, message", [
    ("{not json", "not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
    ('{"type": "objekt"}', "not a valid JSON Schema"),
])
def test_bad_schema_file(tmp_path, capsys, schema_text, message):
    bad = tmp_path / "bad.json"
    bad.write_text(schema_text)
    assert main(["extract", "--schema", str(bad), str(bad)]) == 2
    assert message in capsys.readouterr().err


def test_unknown_schema_name_and_missing_input(schema_file, tmp_path, capsys):
    assert main(["extract", "--schema", "no-such-schema", "x.txt"]) == 2
    assert "neither a file nor a shipped schema name" in capsys.readouterr().err
    assert main(["extract", "--schema", str(schema_file), str(tmp_path / "missing.txt")]) == 2
    assert "missing.txt: no such file" in capsys.readouterr().err


def test_bad_jsonl_line(schema_file, tmp_path, capsys):
    records = tmp_path / "r.jsonl"
    records.write_text('{"text": "ok"}\n{oops\n')
    assert main(["extract", "--schema", str(schema_file), str(records)]) == 2
    assert f"{records}:2: not a JSON record" in capsys.readouterr().err


def test_unenforceable_schema_fails_before_generating(model_dir, tmp_path, capsys):
    bad = tmp_path / "s.json"
    bad.write_text(json.dumps({"type": "object", "properties": {"a": {"type": "string", "pattern": "(a)\\1"}}}))
    text = tmp_path / "t.txt"
    text.write_text("x")
    assert main(["extract", "--model", str(model_dir), "--schema", str(bad), str(text)]) == 2
    err = capsys.readouterr().err
    assert "backreference" in err and "/properties/a" in err, err


def test_progress_bar_on_a_terminal(model_dir, schema_file, tmp_path):
    """stderr on a terminal (a pty, even one reporting no width): a tqdm bar; stdout stays JSONL."""
    import os
    import pty
    import subprocess
    import sys

    (tmp_path / "a.txt").write_text("Ann rates it 5")
    (tmp_path / "b.txt").write_text("Bo rates it 2")
    controller, terminal = pty.openpty()
    cli = "import sys; from deepinfer.cli import main; sys.exit(main())"
    r = subprocess.run([sys.executable, "-c", cli, "extract", "--schema", str(schema_file),
                        "--model", str(model_dir), "--max-tokens", "64", "--json-whitespace", "compact",
                        str(tmp_path / "a.txt"), str(tmp_path / "b.txt")],
                       stdout=subprocess.PIPE, stderr=terminal, timeout=300)
    os.close(terminal)
    shown = b""
    try:
        while chunk := os.read(controller, 4096):
            shown += chunk
    except OSError:  # the terminal side is closed: all read
        pass
    os.close(controller)
    assert b"2/2" in shown and b"100%" in shown, shown
    assert r.returncode in (0, 1) and all(json.loads(line) for line in r.stdout.decode().splitlines())


def test_array_items_are_distinct_by_default(model_dir, tmp_path, capsys):
    """A random model at a high temperature repeats items freely; extract keeps them distinct
    (every array gets uniqueItems) unless --no-distinct-items."""
    import argparse

    from deepinfer.cli.extract import add_arguments

    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": list("abcdefg")},
                                                        "minItems": 3, "maxItems": 6}},
              "required": ["tags"], "additionalProperties": False}
    path = tmp_path / "tags.json"
    path.write_text(json.dumps(schema))
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for i in range(4):
        (inputs / f"in{i}.txt").write_text(f"tags {i}")
    assert main(["extract", "--model", str(model_dir), "--schema", str(path), "--json-whitespace", "compact",
                 "--max-tokens", "64", "--temperature", "1.5", str(inputs)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 4
    for line in lines:
        jsonschema.validate(line, schema)
        assert len(set(line["tags"])) == len(line["tags"]), line
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    base = ["--schema", str(path), "x.txt"]
    assert parser.parse_args(base).distinct_items is True
    assert parser.parse_args(["--distinct-items", *base]).distinct_items is True
    assert parser.parse_args(["--no-distinct-items", *base]).distinct_items is False


def test_cut_off_message_names_the_option_that_helps():
    from types import SimpleNamespace

    from deepinfer.cli.extract import check_output

    output = SimpleNamespace(finish_reason="length", text='{"tags": ["a", "a", "a"', outputs=[])
    validator = jsonschema.Draft202012Validator({"type": "object"})
    _, distinct = check_output(output, validator, 16)
    _, repeated = check_output(output, validator, 16, distinct=False)
    assert "raise --max-tokens" in distinct and "--distinct-items" not in distinct
    assert "leave out --no-distinct-items" in repeated
