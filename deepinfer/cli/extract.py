"""`deepinfer extract --schema FILE_OR_NAME INPUT...`: one validated JSON object per input.

Inputs are text files (one input each), folders (each file in them), `-` for
stdin, or JSONL files of records (one input per line: the record's text field,
a JSON string, or else the record itself). All inputs run batched through the
engine (`LLM.chat` with a JSON Schema constraint); each output is parsed and
validated with `jsonschema` and written as one JSONL line, in input order.
Outputs end complete within --max-tokens (the engine closes them in time), and
array items are kept distinct (every array of the schema gets `uniqueItems`,
constraints.distinct_items), so a small model cannot loop on one item;
--no-distinct-items lets items repeat. An input whose output cannot be completed
is reported on stderr, and the exit status is 1; a bad schema or input, or a
--max-tokens too small for any complete output, is status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from deepinfer.errors import UserError

DEFAULT_INSTRUCTIONS = "Extract the information in the user's text as one JSON object."


@dataclass
class Item:
    label: str  # where the input came from: a file, "file:line" or "<stdin>"
    text: str


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="INPUT",
                        help="text file, folder of text files, JSONL file of records, or - for stdin")
    parser.add_argument("--schema", required=True, metavar="FILE_OR_NAME",
                        help="JSON Schema file, or a shipped schema name (e.g. invoice, person)")
    parser.add_argument("--instructions", default=DEFAULT_INSTRUCTIONS,
                        help="system instructions placed before each input")
    parser.add_argument("--model", default=None, help="model directory or .gguf file (default model otherwise)")
    parser.add_argument("--output", "-o", default=None, help="write JSONL here instead of stdout")
    parser.add_argument("--jsonl", action="store_true", help="treat every input (also stdin) as JSONL records")
    parser.add_argument("--text-field", default="text", help="field holding the text in JSONL records")
    parser.add_argument("--with-input", action="store_true",
                        help='write {"input": LABEL, "output": OBJECT} (or "error") lines instead of bare objects')
    parser.add_argument("--max-tokens", type=int, default=512,
                        help="most tokens per output (default 512); outputs are closed in time to end complete")
    parser.add_argument("--distinct-items", action=argparse.BooleanOptionalAction, default=True,
                        help="keep array items distinct, so a model cannot loop on one item (on by default; "
                             "--no-distinct-items lets items repeat)")
    parser.add_argument("--batch-size", type=int, default=16, help="inputs per engine batch (default 16)")
    parser.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    parser.add_argument("--json-whitespace", choices=("default", "compact", "unbounded"), default=None,
                        help="whitespace allowed inside the JSON (default: pretty-printer style, bounded)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    from deepinfer.cli.quantization_args import add_quantization_argument
    add_quantization_argument(parser)


def _jsonl_items(label: str, text: str, field: str) -> list[Item]:
    items = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{label}:{lineno}: not a JSON record: {exc.msg} at column {exc.colno}") from None
        if isinstance(record, dict) and isinstance(record.get(field), str):
            value = record[field]
        elif isinstance(record, str):
            value = record
        else:
            value = json.dumps(record, ensure_ascii=False)
        items.append(Item(f"{label}:{lineno}", value))
    return items


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None


def read_inputs(inputs: list[str], jsonl: bool = False, text_field: str = "text", stdin=None) -> list[Item]:
    """Every input as (label, text), in order."""
    items: list[Item] = []
    for name in inputs:
        if name == "-":
            text = (stdin or sys.stdin).read()
            items += _jsonl_items("<stdin>", text, text_field) if jsonl else [Item("<stdin>", text)]
            continue
        path = Path(name)
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")) \
            if path.is_dir() else [path]
        for file in files:
            text = _read(file)
            if jsonl or file.suffix == ".jsonl":
                items += _jsonl_items(str(file), text, text_field)
            else:
                items.append(Item(str(file), text))
    if not items:
        raise UserError("no inputs to extract from")
    return items


def conversation(instructions: str, schema: dict, text: str) -> list[dict]:
    system = f"{instructions}\nThe JSON object must follow this JSON Schema:\n{json.dumps(schema)}"
    return [{"role": "system", "content": system}, {"role": "user", "content": text}]


def check_output(output, schema_validator, max_tokens: int, distinct: bool = True):
    """(object, None) for a valid output, else (None, reason); `distinct`: array items were kept
    distinct (else a cut-off output may be a model looping on an item, which they would stop)."""
    reason = str(getattr(output.finish_reason, "value", output.finish_reason))
    if reason == "error":
        error = output.outputs[0].error or "generation failed"
        if "max_tokens" in error:
            return None, f"{error} (--max-tokens {max_tokens})"
        return None, error
    if reason == "length" and not _validates(output.text, schema_validator):
        hint = "" if distinct else ", or leave out --no-distinct-items if the model loops on an array item"
        return None, f"output cut off at --max-tokens {max_tokens} before the JSON was complete; raise --max-tokens{hint}"
    try:
        value = json.loads(output.text)
    except json.JSONDecodeError as exc:
        return None, f"output is not JSON: {exc.msg}"
    errors = sorted(schema_validator.iter_errors(value), key=lambda e: list(e.path))
    if errors:
        return None, f"output fails the schema at /{'/'.join(map(str, errors[0].path))}: {errors[0].message}"
    return value, None


def _validates(text: str, validator) -> bool:
    """A constrained output that used up --max-tokens is still complete when it validates."""
    try:
        return validator.is_valid(json.loads(text))
    except json.JSONDecodeError:
        return False


def _bar_size() -> dict:
    """tqdm sizes the bar to the terminal, but draws nothing on one reporting 0x0 (a fresh pty)."""
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError):
        return {}
    return {} if size.columns > 0 and size.lines > 0 else {"ncols": 80, "nrows": 24}


def _constraint(llm, schema, args) -> dict:
    """The schema the outputs are generated under: with distinct array items unless
    --no-distinct-items (stricter than `schema`, so outputs still validate against it); compiled
    now, so that a schema the compiler cannot enforce or a --max-tokens too small is status 2."""
    from deepinfer.constraints import ConstraintError, check_budget, distinct_items

    ws = {} if args.json_whitespace is None else {"whitespace": args.json_whitespace}
    compiler = llm.engine.compiler
    compiled = compiler.compile_json_schema(schema, **ws)  # fail fast on a schema we cannot enforce
    constraint = schema
    if args.distinct_items and isinstance(schema, dict):
        try:
            compiled, constraint = compiler.compile_json_schema(distinct_items(schema), **ws), distinct_items(schema)
        except ConstraintError as exc:  # e.g. distinct items the compiler cannot track: repeats allowed
            print(f"deepinfer: array items may repeat ({exc})", file=sys.stderr)
    try:
        check_budget(compiled, args.max_tokens)
    except ConstraintError as exc:
        raise UserError(f"--max-tokens {args.max_tokens}: {exc}") from None
    return constraint


def run(args: argparse.Namespace) -> int:
    import jsonschema
    from tqdm import tqdm

    from deepinfer import LLM, SamplingParams
    from deepinfer.cli.constraint_args import load_schema

    schema, _ = load_schema(args.schema)
    try:
        validator_cls = jsonschema.validators.validator_for(schema)
        validator_cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise UserError(f"--schema {args.schema}: not a valid JSON Schema: {exc.message}") from None
    items = read_inputs(args.inputs, args.jsonl, args.text_field)
    llm = LLM(args.model, dtype=args.dtype, quantization=args.quantization)
    constraint = _constraint(llm, schema, args)
    params = SamplingParams(json_schema=constraint, max_tokens=args.max_tokens, temperature=args.temperature,
                            seed=args.seed, json_whitespace=args.json_whitespace)
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    failures = 0
    try:
        with tqdm(total=len(items), unit="input", file=sys.stderr, disable=not sys.stderr.isatty(),
                  **_bar_size()) as bar:
            for start in range(0, len(items), max(1, args.batch_size)):
                batch = items[start:start + args.batch_size]
                outputs = llm.chat([conversation(args.instructions, schema, it.text) for it in batch], params)
                for item, output in zip(batch, outputs):
                    value, problem = check_output(output, validator_cls(schema), args.max_tokens, args.distinct_items)
                    if problem is not None:
                        failures += 1
                        print(f"deepinfer: {item.label}: {problem}", file=sys.stderr)
                    if args.with_input:
                        line = {"input": item.label, **({"output": value} if problem is None else {"error": problem})}
                    elif problem is None:
                        line = value
                    else:
                        continue
                    out.write(json.dumps(line, ensure_ascii=False) + "\n")
                out.flush()
                bar.update(len(batch))
    finally:
        if out is not sys.stdout:
            out.close()
    return 1 if failures else 0
