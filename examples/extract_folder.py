"""Extract one JSON object per text file in a folder, validated, as JSONL.

    python examples/extract_folder.py FOLDER [--schema FILE_OR_NAME] [--model DIR] [-o out.jsonl]

The same job as `deepinfer extract`, written against the library: read the
texts, run them as one batch through `LLM.chat` under a JSON Schema, check
every answer with `jsonschema`, write JSONL. The schema is a file, a shipped
name from constraints/ (e.g. `invoice`), or by default a small built-in one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import jsonschema

from deepinfer import LLM, SamplingParams

DEFAULT_SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 60},
        "people": {"type": "array", "items": {"type": "string", "maxLength": 40}, "maxItems": 5},
        "sentiment": {"enum": ["positive", "neutral", "negative"]},
    },
    "required": ["title", "people", "sentiment"],
    "additionalProperties": False,
}


def load_schema(value: str | None) -> dict:
    if value is None:
        return DEFAULT_SCHEMA
    from deepinfer.cli.constraint_args import load_schema as resolve  # file path or shipped name
    return resolve(value)[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--schema", default=None, help="JSON Schema file or shipped schema name")
    parser.add_argument("--model", default=os.environ.get("DEEPINFER_MODEL_DIR"))
    parser.add_argument("--max-tokens", type=int, default=300)
    parser.add_argument("-o", "--output", type=Path, default=None)
    args = parser.parse_args()

    schema = load_schema(args.schema)
    files = sorted(p for p in args.folder.glob("*.txt"))
    if not files:
        print(f"{args.folder}: no .txt files", file=sys.stderr)
        return 2
    llm = LLM(args.model)
    system = "Extract the facts of the text as JSON following this schema:\n" + json.dumps(schema)
    conversations = [[{"role": "system", "content": system},
                      {"role": "user", "content": f.read_text(encoding="utf-8")}] for f in files]
    params = SamplingParams(json_schema=schema, temperature=0, max_tokens=args.max_tokens,
                            json_whitespace="compact")
    out = args.output.open("w", encoding="utf-8") if args.output else sys.stdout
    failed = 0
    for path, result in zip(files, llm.chat(conversations, params)):
        if result.finish_reason != "stop":
            print(f"{path.name}: unfinished ({result.finish_reason})", file=sys.stderr)
            failed += 1
            continue
        record = json.loads(result.text)
        jsonschema.validate(record, schema)  # guaranteed by the constraint; checked anyway
        out.write(json.dumps({"file": path.name, **record}, ensure_ascii=False) + "\n")
    if out is not sys.stdout:
        out.close()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
