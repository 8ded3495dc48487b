"""Shared set-up for the engine benchmarks: the model, thread count, prompts, the transformers peer.

Benchmarks are scripts, not tests: they print a table and the command that made it, and with
`--json PATH` write the same results for `benchmarks/report.py`.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import torch

from result_json import add_json_argument

EXTRACTION_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 130},
        "city": {"type": "string", "maxLength": 40},
        "occupation": {"type": "string", "maxLength": 40},
        "skills": {"type": "array", "items": {"type": "string", "maxLength": 24}, "maxItems": 4},
    },
    "required": ["name", "age", "city", "occupation", "skills"],
    "additionalProperties": False,
}

PEOPLE = [("Ada Lovelace", 36, "London", "mathematician", "analysis, poetry, engines"),
          ("Grace Hopper", 85, "Arlington", "rear admiral", "compilers, COBOL, teaching"),
          ("Alan Turing", 41, "Manchester", "computer scientist", "logic, cryptanalysis, running"),
          ("Katherine Johnson", 101, "Hampton", "mathematician", "orbital mechanics, geometry"),
          ("Linus Torvalds", 54, "Portland", "software engineer", "kernels, git, diving"),
          ("Hedy Lamarr", 85, "Vienna", "actress and inventor", "frequency hopping, film"),
          ("Tim Berners-Lee", 69, "Oxford", "physicist", "hypertext, networking, standards"),
          ("Margaret Hamilton", 88, "Boston", "engineer", "flight software, testing")]

FILLER = ("The profile below was collected from a public biography. It mentions family, early "
          "education, notable achievements, awards, the places where the person lived and worked, "
          "and several anecdotes from colleagues who remember long evenings of careful work. ")


def extraction_prompt(i: int) -> list[dict]:
    name, age, city, job, skills = PEOPLE[i % len(PEOPLE)]
    text = (FILLER * 3 + f"Record {i}: {name} is a {age}-year-old {job} who lives in {city}. "
            f"Known skills include {skills}. " + FILLER)
    return [{"role": "system", "content": "You extract facts as JSON."},
            {"role": "user", "content": f"{text}\nExtract name, age, city, occupation and skills as JSON."}]


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--model", default=None, help="model dir or GGUF (default: SmolLM2-135M-Instruct)")
    p.add_argument("--dtype", default="both", choices=["float32", "bfloat16", "both"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--no-peer", action="store_true", help="skip the transformers side")
    add_json_argument(p)
    return p


def dtypes(arg: str) -> list[str]:
    return ["float32", "bfloat16"] if arg == "both" else [arg]


def setup(args) -> None:
    torch.set_num_threads(args.threads)
    print(f"# {platform.processor() or platform.machine()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


def model_dir(model: str | None):
    from deepinfer.model.hub import resolve_model
    return resolve_model(model)


def hf_model(path, dtype: str):
    """transformers' model and tokenizer on the same weights (a converted model directory)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype)).eval()
    return model, tokenizer


def xgrammar_factory(hf_tokenizer, vocab_size: int, schema: dict):
    """A maker of fresh xgrammar logits processors (one per generate batch: it keeps per-row matchers).

    The grammar compiles once, here, before any timing: deepinfer's compile is warm too (its
    benchmark warms up), so neither side is timed compiling (about 0.2-0.3 s per compile here).
    """
    import xgrammar as xgr

    info = xgr.TokenizerInfo.from_huggingface(hf_tokenizer, vocab_size=vocab_size)
    compiled = xgr.GrammarCompiler(info).compile_json_schema(json.dumps(schema))
    return lambda: xgr.contrib.hf.LogitsProcessor(compiled)


def hf_generate(model, tokenizer, prompts: list[str], max_new_tokens: int, batch_size: int,
                logits_processor_factory=None, min_new_tokens: int = 0) -> tuple[float, int, list[str]]:
    """Greedy transformers generate in batches; returns (seconds, generated tokens, texts)."""
    total_tokens, texts = 0, []
    start = time.perf_counter()
    for i in range(0, len(prompts), batch_size):
        batch = tokenizer(prompts[i:i + batch_size], return_tensors="pt", padding=True, add_special_tokens=False)
        processors = [logits_processor_factory()] if logits_processor_factory else None
        with torch.no_grad():
            out = model.generate(**batch, max_new_tokens=max_new_tokens, min_new_tokens=min_new_tokens,
                                 do_sample=False, logits_processor=processors, pad_token_id=tokenizer.pad_token_id)
        new = out[:, batch["input_ids"].shape[1]:]
        for row in new:
            ids = [t for t in row.tolist() if t != tokenizer.pad_token_id]
            total_tokens += len(ids)
            texts.append(tokenizer.decode(ids, skip_special_tokens=True))
    return time.perf_counter() - start, total_tokens, texts


def table(rows: list[list], header: list[str]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda r: "| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths)) + " |"  # noqa: E731
    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
