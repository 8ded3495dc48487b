"""jsonschema (~1 s to import) is imported only by a schema that needs a verdict on a value,
and its import is not counted as lowering time (jsonschema_import.py)."""

import json
import subprocess
import sys

COMPILE = """
import json, sys
from deepinfer.constraints import GrammarCompiler, Vocabulary
from deepinfer.constraints.frontends.json.jsonschema_import import import_wall_s
vocab = Vocabulary.from_token_bytes([bytes([b]) for b in range(256)] + [None], eos_ids=[256])
compiled = GrammarCompiler(vocab).compile_json_schema(json.loads(sys.argv[1]))
print(json.dumps({"imported": "jsonschema" in sys.modules, "lower_s": compiled.stats["lower_s"],
                  "import_s": import_wall_s()}))
"""


def compile_in_a_fresh_process(schema) -> dict:
    done = subprocess.run([sys.executable, "-c", COMPILE, json.dumps(schema)], capture_output=True,
                          text=True, check=True, timeout=120)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_simple_schema_compiles_without_importing_jsonschema():
    got = compile_in_a_fresh_process({"type": "object", "properties": {
        "name": {"type": "string", "enum": ["a", "b"]}, "age": {"type": "integer", "minimum": 0}},
        "required": ["name"]})
    assert got["imported"] is False and got["import_s"] == 0.0


def test_a_verdict_on_a_value_imports_it_outside_the_lowering_time():
    got = compile_in_a_fresh_process({"type": "object", "properties": {"a": {"type": "integer"}},
                                      "enum": [{"a": 1}, {"a": "x"}]})
    assert got["imported"] is True and got["import_s"] > 0
    assert got["lower_s"] < got["import_s"]  # a ms lowering, not the import's second
