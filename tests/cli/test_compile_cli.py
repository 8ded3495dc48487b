"""`deepinfer compile`: the IR, state counts, timing, annotations, and located errors."""

from __future__ import annotations

import json

import pytest

from deepinfer.cli import main


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from deepinfer.testing import make_tiny_model_dir
    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny") / "model")


def test_regex_report(model_dir, capsys):
    assert main(["compile", "--model", str(model_dir), "--regex", "[0-9]{3}-[a-z]+"]) == 0
    out = capsys.readouterr().out
    assert "compile time:" in out and "dfa_states:" in out
    assert 'start ::= [0-9]{3} "-" [a-z]+' in out


def test_schema_json_report(model_dir, tmp_path, capsys):
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"when": {"type": "string", "format": "date"}},
                                  "required": ["when"], "additionalProperties": False}))
    assert main(["compile", "--model", str(model_dir), "--schema", str(schema), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kind"] == "json_schema" and report["compile_seconds"] > 0
    assert '"\\"when\\"' in report["ebnf"] and report["stats"]["dfa_states"] > 1


def test_shipped_grammar_by_name(model_dir, capsys):
    assert main(["compile", "--model", str(model_dir), "--grammar", "sql", "--no-ebnf"]) == 0
    out = capsys.readouterr().out
    assert "grammars/sql" in out and "rules:" in out
    assert "cfg_productions:" in out and "cfg_lexeme_dfa_states:" in out


def test_grammar_error_names_line_and_column(model_dir, tmp_path, capsys):
    bad = tmp_path / "bad.gbnf"
    bad.write_text('root ::= "a" rest\n')
    assert main(["compile", "--model", str(model_dir), "--grammar", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "undefined rule 'rest'" in err and "line 1" in err


def test_schema_error_names_pointer(model_dir, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"type": "object", "properties": {"n": {"type": "string", "pattern": "(a)\\1"}},
                               "required": ["n"], "additionalProperties": False}))
    assert main(["compile", "--model", str(model_dir), "--schema", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "/properties/n" in err and "backreference" in err, err


def test_exactly_one_constraint_is_required(capsys):
    with pytest.raises(SystemExit):
        main(["compile", "--regex", "a", "--grammar", "sql"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_unknown_keywords_and_formats_are_listed(model_dir, tmp_path, capsys):
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "object", "x-order": 1, "properties": {
        "name": {"type": "string", "maxLenght": 5, "title": "Name"},
        "tags": {"type": "array", "items": {"enum": ["a"], "x-ui": "chip"}}}}))
    assert main(["compile", "--model", str(model_dir), "--schema", str(schema), "--no-ebnf"]) == 0
    out = capsys.readouterr().out
    for pointer in ("/x-order", "/properties/name/maxLenght", "/properties/tags/items/x-ui"):
        assert f"  - {pointer}\n" in out, out
    assert "/properties/name/title" not in out  # title is standard


def test_an_unknown_format_is_refused_as_generation_refuses_it(model_dir, tmp_path, capsys):
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"when": {"type": "string", "format": "sometime"}}}))
    assert main(["compile", "--model", str(model_dir), "--schema", str(schema), "--no-ebnf"]) != 0
    err = capsys.readouterr().err
    assert "/properties/when/format" in err and "unknown format 'sometime'" in err, err
