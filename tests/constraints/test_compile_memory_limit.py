"""A compile's memory limit (Limits.max_compile_bytes, deadline.py) holds.

- The check itself, with a fake clock and a fake resident-memory reader: it trips past the
  limit and not below it, reads memory at most every SAMPLE_EVERY_S (not on every check), and
  names the limit, the growth, the stage and the option.
- A compile through GrammarCompiler whose fake reader reports steady growth stops with the
  memory error (the limit reaches the compiler's loops, whatever the machine's RSS does).
- The real case, in a fresh process: a 7,000-property JSON Schema (which grew a server by
  ~2.2 GB while lowering) with a 50 MiB limit stops with a ConstraintError naming it; the
  process's peak RSS growth is measured by a thread of its own and printed.
- A compile well within the limit builds what an unlimited compile builds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from deepinfer.constraints import ConstraintError, GrammarCompiler, Limits
from deepinfer.constraints import deadline as deadline_module
from deepinfer.constraints.deadline import SAMPLE_EVERY_S, Deadline, DeadlineExceeded
from deepinfer.constraints.errors import Reason

MIB = 1 << 20
BASE = 1 << 30  # the fake process's resident bytes when the compile starts


class FakeMemory:
    """Resident bytes as the test sets them; counts reads."""

    def __init__(self, value: int) -> None:
        self.value, self.reads = value, 0

    def __call__(self) -> int:
        self.reads += 1
        return self.value


def test_the_check_trips_past_the_limit_only_and_samples_sparingly(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(deadline_module, "clock", lambda: now[0])
    memory = FakeMemory(BASE)
    limit = Deadline(max_bytes=50 * MIB, read_memory=memory, started=now[0], kind="JSON Schema")
    assert memory.reads == 1  # the baseline

    memory.value = BASE + 80 * MIB  # over the limit, but within SAMPLE_EVERY_S of the start:
    for _ in range(1000):          # checks cost a clock read, no memory read
        limit.check()
    assert memory.reads == 1

    now[0] += SAMPLE_EVERY_S
    memory.value = BASE + 40 * MIB  # sampled now, under the limit
    limit.check()
    assert memory.reads == 2 and limit.grown == 40 * MIB and not limit.tripped

    memory.value = BASE + 60 * MIB  # over it, but the next sample is not due yet
    now[0] += SAMPLE_EVERY_S / 2
    limit.check()
    assert memory.reads == 2

    now[0] += SAMPLE_EVERY_S
    limit.where, limit.stage = "/properties/p17", "lowering"
    with pytest.raises(DeadlineExceeded):
        limit.check()
    assert limit.tripped == "memory" and limit.grown == 60 * MIB
    with pytest.raises(DeadlineExceeded):  # every later check raises again, reading nothing
        limit.check()
    assert memory.reads == 3

    err = limit.error()
    assert err.reason is Reason.LIMIT
    assert str(err) == ("JSON Schema compile stopped at its memory limit of 50 MiB (resident memory grew "
                        "60 MiB) at /properties/p17, while lowering; raise it with Limits(max_compile_bytes=...)")


def test_no_byte_limit_or_no_reader_reads_nothing(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(deadline_module, "clock", lambda: now[0])
    memory = FakeMemory(BASE)
    unlimited = Deadline(limit_s=10.0, read_memory=memory, started=0.0)
    now[0] = 1.0
    unlimited.check()
    assert memory.reads == 0
    blind = Deadline(max_bytes=MIB, read_memory=lambda: None, started=1.0)  # no statm, no getrusage
    now[0] = 2.0
    blind.check()
    assert not blind.tripped


def test_a_compile_stops_at_its_memory_limit(tiny_vocab, monkeypatch):
    """GrammarCompiler hands max_compile_bytes to the compile's Deadline and its loops sample it:
    a reader reporting 1 MiB more at every read stops the lowering of a big schema."""
    reads = [0]

    def growing() -> int:
        reads[0] += 1
        return BASE + reads[0] * MIB

    monkeypatch.setattr(deadline_module, "_READER", growing)
    compiler = GrammarCompiler(tiny_vocab, limits=Limits(max_compile_bytes=20 * MIB))
    with pytest.raises(ConstraintError) as info:
        compiler.compile_json_schema(wide_schema(3000))
    text = str(info.value)
    assert info.value.limit and text.startswith("JSON Schema compile stopped at its memory limit of 20 MiB ("), text
    assert "max_compile_bytes" in text and reads[0] > 20


def test_a_compile_within_its_memory_limit_builds_the_unlimited_result(tiny_vocab):
    limited = GrammarCompiler(tiny_vocab, limits=Limits(max_compile_bytes=1 << 40))
    plain = GrammarCompiler(tiny_vocab)
    schema = wide_schema(20)
    assert str(limited.compile_json_schema(schema).grammar) == str(plain.compile_json_schema(schema).grammar)
    a, b = limited.compile_regex("(a|b)*a(a|b){6}").automaton.dfa, plain.compile_regex("(a|b)*a(a|b){6}").automaton.dfa
    assert a.digest == b.digest


def wide_schema(n: int) -> dict:
    """n bounded string properties, all required (7,000 of them grew a server by ~2.2 GB)."""
    return {"type": "object", "properties": {f"p{i}": {"type": "string", "maxLength": 50} for i in range(n)},
            "required": [f"p{i}" for i in range(n)]}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_the_real_7000_property_schema_stops_near_a_50_mib_limit():
    """In a fresh process: the compile stops with the memory error, and the peak resident growth,
    read by a thread of its own every 0.5 ms apart from the Deadline's samples, stays near the
    limit."""
    code = textwrap.dedent(f"""
        import json, sys, threading, time
        from deepinfer.constraints import ConstraintError, GrammarCompiler, Limits, Vocabulary
        from deepinfer.constraints.deadline import resident_bytes
        vocab = Vocabulary.from_token_bytes([bytes([b]) for b in range(256)])
        compiler = GrammarCompiler(vocab, limits=Limits(max_compile_bytes=50 << 20))
        compiler.compile_json_schema({{"type": "string"}})  # one-time costs (imports, tables) first
        n = int(sys.argv[1])
        schema = {{"type": "object", "properties": {{f"p{{i}}": {{"type": "string", "maxLength": 50}} for i in range(n)}},
                  "required": [f"p{{i}}" for i in range(n)]}}
        peak, done = [0], threading.Event()

        def watch():  # the peak, read apart from the Deadline's own samples
            while not done.is_set():
                peak[0] = max(peak[0], resident_bytes())
                time.sleep(0.0005)

        sys.setswitchinterval(0.0005)
        base, t = resident_bytes(), time.perf_counter()
        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            compiler.compile_json_schema(schema)
            verdict = "compiled"
        except ConstraintError as exc:
            verdict = str(exc)
        seconds = time.perf_counter() - t
        done.set()
        watcher.join()
        print(json.dumps({{"verdict": verdict, "seconds": seconds, "peak_growth": peak[0] - base,
                          "after_growth": resident_bytes() - base}}))
    """)
    out = subprocess.run([sys.executable, "-c", code, "7000"],  # wide_schema(7000), built there
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"7,000 properties, 50 MiB limit: stopped after {result['seconds']:.2f} s, peak RSS growth "
          f"{result['peak_growth'] / MIB:.1f} MiB, {result['after_growth'] / MIB:.1f} MiB after unwinding; "
          f"{result['verdict']}")
    assert result["verdict"].startswith("JSON Schema compile stopped at its memory limit of 50 MiB"), result
    assert "max_compile_bytes" in result["verdict"]
    assert 50 * MIB < result["peak_growth"] < 80 * MIB, result  # the limit, plus a sample's growth and the unwinding
