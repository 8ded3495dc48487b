"""`deepinfer extract` with the default model (SmolLM2-135M-Instruct, Q4_1 GGUF) on real inputs
shipped in tests/data/extract/, under every shipped schema: exit status 0, one output per input,
each valid against the schema (jsonschema). Slow: loads the default model and generates."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from deepinfer.cli import main
from deepinfer.cli.constraint_args import load_schema
from deepinfer.testing import default_model_dir_or_skip

DATA = Path(__file__).resolve().parents[1] / "data" / "extract"
CASES = [("invoice", ["invoice_acme.txt", "invoice_lines.txt", "invoices.jsonl"]),
         ("person", ["person_notes.txt"]),
         ("product_review", ["review.txt"]),
         ("event", ["event.txt"])]


def _inputs(files: list[str]) -> int:
    return sum(len((DATA / f).read_text().splitlines()) if f.endswith(".jsonl") else 1 for f in files)


@pytest.mark.slow
@pytest.mark.parametrize("schema_name, files", CASES, ids=[c[0] for c in CASES])
def test_extract_gives_complete_valid_outputs(schema_name, files, capsys):
    default_model_dir_or_skip(allow_download=True)
    schema, _ = load_schema(schema_name)
    status = main(["extract", "--schema", schema_name, *[str(DATA / f) for f in files]])
    out, err = capsys.readouterr()
    assert status == 0, err
    lines = out.splitlines()
    assert len(lines) == _inputs(files), (out, err)
    for line in lines:
        jsonschema.validate(json.loads(line), schema)


@pytest.mark.slow
def test_the_readme_invoice_example_from_stdin(capsys, monkeypatch):
    """README / the report: `printf 'Invoice from Acme Corp ...' | deepinfer extract --schema invoice -`."""
    import io

    default_model_dir_or_skip(allow_download=True)
    monkeypatch.setattr("sys.stdin", io.StringIO((DATA / "invoice_acme.txt").read_text()))
    status = main(["extract", "--schema", "invoice", "-"])
    out, err = capsys.readouterr()
    assert status == 0, err
    jsonschema.validate(json.loads(out), load_schema("invoice")[0])
