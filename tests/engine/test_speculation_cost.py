"""The step-cost model and the decision it drives: a draft token is verified only when its expected
gain pays for its row. Costs are injected (a fake probe, fake step times), never measured here, so
every decision is deterministic."""

import pytest

from deepinfer import SamplingParams
from deepinfer.engine import forward_probe
from deepinfer.engine.speculation.draft_lengths import choose_lengths
from deepinfer.engine.speculation.speculative import SpeculativeConfig
from deepinfer.engine.speculation.step_cost import GRID, ForwardCurve, MeasuredCost, PriorCost


def curve_of(f, max_tokens=512):
    probed = []

    def probe(tokens):
        probed.append(tokens)
        return f(tokens)
    return ForwardCurve(probe, max_tokens), probed


def test_forward_curve_probes_the_grid_points_bracketing_a_range_lazily():
    curve, probed = curve_of(lambda b: 0.01 + 0.001 * b)
    assert curve(5) is None and curve.needed(5, 13) == [4, 6, 8, 12, 16]
    cost = MeasuredCost(curve, probes_per_step=2)
    cost.prepare(5, 13)
    assert probed == [4, 6]
    cost.prepare(5, 13)
    assert probed == [4, 6, 8, 12]
    assert curve.needed(5, 13) == [16]
    assert curve(5) == pytest.approx(0.015)            # between probed points: linear
    # past the last probed point: the last slope, or the mean per row there if dearer
    assert curve(20) == pytest.approx(0.022 + 0.022 / 13 * 8)
    assert curve(1) == pytest.approx(0.011)            # before the first: the first slope
    assert max(g for g in GRID if g <= 40) in curve_of(lambda b: 1.0, max_tokens=40)[0].needed(1, 10**6)


def test_a_probe_that_declines_is_not_asked_again():
    curve, probed = curve_of(lambda b: None if b > 8 else 0.01 * b)
    cost = MeasuredCost(curve, probes_per_step=10)
    cost.prepare(6, 20)
    assert probed == [6, 8, 12, 16, 24] and curve.needed(6, 20) == []
    assert curve(20) == pytest.approx(0.2)             # extrapolated from 6 and 8


def test_the_residual_fit_adds_what_a_real_step_costs_beyond_the_probe():
    curve, _ = curve_of(lambda b: 0.010 + 0.001 * b)
    cost = MeasuredCost(curve, probes_per_step=100)
    cost.prepare(1, 512)
    cost.prepare(1, 512)
    for b in [4, 8, 16, 32, 64] * 20:                  # real steps: +5 ms fixed, +0.5 ms per token
        cost.observe(b, 0.010 + 0.001 * b + 0.005 + 0.0005 * b)
    cost.prepare(1, 512)
    a, b = cost.residual()
    assert a == pytest.approx(0.005, abs=2e-4) and b == pytest.approx(0.0005, rel=0.05)
    assert cost.seconds(10) == pytest.approx(0.010 + 0.010 + 0.005 + 0.005, rel=0.02)
    flat = MeasuredCost(curve_of(lambda b: 0.01)[0], probes_per_step=100)
    flat.prepare(1, 64)
    for _ in range(50):
        flat.observe(16, 0.03)                         # one batch size only: no slope to see
    flat.prepare(1, 64)
    assert flat.residual() == pytest.approx((0.02, 0.0))


def test_nothing_is_verified_when_no_draft_pays_for_its_row():
    # one stream; a step of B tokens costs 30 ms + 6 ms per token: a row is 1/6 of a step of one
    cost = PriorCost(5.0)   # T(B) = 5 + B (in rows): the same shape
    assert choose_lengths([[0.15, 0.1]], 1, 1.0, cost, 10) == [0]
    assert choose_lengths([[0.2, 0.1]], 1, 1.0, cost, 10) == [1]   # 1.2 / 7 > 1 / 6
    # rows nearly free next to the step (a large model, a small batch): long drafts pay
    assert choose_lengths([[0.5, 0.3, 0.2, 0.1]], 1, 1.0, PriorCost(1000.0), 10) == [4]


def test_a_costly_first_row_is_verified_when_the_rows_it_opens_pay_for_it():
    """One stream on a CPU: the second row of a step costs 30% (a GEMM instead of a GEMV), the
    next ones 1% each. No single draft token pays alone, four together do."""
    curve, _ = curve_of(lambda b: 1.0 if b == 1 else 1.3 + 0.01 * (b - 2), max_tokens=16)
    cost = MeasuredCost(curve, probes_per_step=100)
    cost.prepare(1, 16)
    assert choose_lengths([[0.28, 0.2, 0.15, 0.1]], 1, 1.0, cost, 16) == [4]    # 1.73 / 1.32 > 1
    assert choose_lengths([[0.1, 0.05, 0.02]], 1, 1.0, cost, 16) == [0]          # 1.17 / 1.31 < 1


def test_a_kink_in_the_measured_curve_stops_the_drafts_before_it():
    """Past 32 rows the forward pass jumps (another GEMM kernel): the 33rd row is not worth it."""
    curve, _ = curve_of(lambda b: 0.1 + 0.001 * b + (0.05 if b > 32 else 0.0), max_tokens=64)
    cost = MeasuredCost(curve, probes_per_step=100)
    cost.prepare(1, 64)
    rows = [[0.9, 0.8]] * 20                            # 20 sequences, 2 good draft tokens each
    lengths = choose_lengths(rows, 20, 20.0, cost, 64)
    assert 20 + sum(lengths) == 32


def fake_forward(monkeypatch, seconds):
    """Every probe of the engine's forward pass returns seconds(tokens)."""
    monkeypatch.setattr(forward_probe, "time_forward", lambda engine, tokens: seconds(tokens))


PROMPTS = ["hello hello hello hello", "abc abc abc", "1 2 3 1 2 3 1 2"]
PARAMS = SamplingParams(temperature=0, max_tokens=40, ignore_eos=True)


def test_an_engine_whose_rows_cost_a_whole_step_each_verifies_only_to_explore(make_llm, monkeypatch):
    """Steps measured at 1000 s per token: a verified row is never worth it; a sequence gets one
    exploratory draft token every explore_every plans (every step: no resting), nothing more.
    Outputs are unchanged."""
    fake_forward(monkeypatch, lambda tokens: 1000.0 * tokens)
    config = SpeculativeConfig(explore_every=8, max_rest=0)
    llm = make_llm(speculative=True, speculative_config=config)
    spec_out = llm.generate(PROMPTS, PARAMS)
    stats = llm.engine.stats()
    plain = make_llm(speculative=False).generate(PROMPTS, PARAMS)
    assert [o.token_ids for o in spec_out] == [o.token_ids for o in plain]
    assert 0 < stats["verified_tokens"] <= len(PROMPTS) * (40 // config.explore_every + 1)


def test_an_engine_whose_rows_are_free_verifies_its_drafts(make_llm, monkeypatch):
    fake_forward(monkeypatch, lambda tokens: 1000.0 + 1e-6 * tokens)
    llm = make_llm(speculative=True, speculative_config=SpeculativeConfig(max_rest=0))
    llm.generate(PROMPTS, PARAMS)
    stats = llm.engine.stats()
    assert stats["verified_tokens"] > 60 and stats["accepted_tokens"] > 0
    assert stats["steps"] < 40


def test_without_a_measured_cost_plans_depend_on_the_requests_only(make_llm, monkeypatch):
    """measured_cost=False: the prior line, no probe, no fit: two runs verify the same rows."""
    monkeypatch.setattr(forward_probe, "time_forward", lambda engine, tokens: pytest.fail("probed"))
    config = SpeculativeConfig(measured_cost=False)
    runs = []
    for _ in range(2):
        llm = make_llm(speculative=True, speculative_config=config)
        llm.generate(PROMPTS, PARAMS)
        stats = llm.engine.stats()
        runs.append((stats["steps"], stats["verified_tokens"], stats["accepted_tokens"]))
        assert isinstance(llm.engine.speculator.cost, PriorCost)
    assert runs[0] == runs[1] and runs[0][1] > 0


def test_probed_curves_outlive_a_speculator_reset(make_llm, monkeypatch):
    calls = []
    fake_forward(monkeypatch, lambda tokens: calls.append(tokens) or 1.0 + 0.01 * tokens)
    llm = make_llm(speculative=True)
    llm.generate(PROMPTS, PARAMS)
    probed = len(calls)
    assert probed > 0
    llm.engine.reset_speculator()
    llm.generate(PROMPTS, PARAMS)
    assert len(calls) == probed


def test_the_real_probe_times_a_forward_pass_and_returns_its_blocks(make_llm):
    llm = make_llm(speculative=True)
    free = llm.engine.blocks.num_free_blocks
    seconds = forward_probe.time_forward(llm.engine, 8)
    assert seconds is not None and seconds > 0
    assert llm.engine.blocks.num_free_blocks == free
    assert forward_probe.time_forward(llm.engine, 10**6) is None   # more KV than the pool holds
    assert llm.engine.blocks.num_free_blocks == free


def test_a_slow_probe_is_capped_by_the_larger_passes_probed():
    times = {1: 0.020, 2: 0.026, 3: 0.043, 4: 0.033, 6: 0.033, 8: 0.039}
    curve = ForwardCurve(lambda tokens: times[tokens], 64)
    for tokens in times:
        curve.measure(tokens)
    assert curve(3) == pytest.approx(0.033) and curve(2) == pytest.approx(0.026)
    assert curve.points[3] == pytest.approx(0.043)            # the probe itself is kept
    assert all(curve(b) <= curve(b + 1) for b in range(1, 8))  # F never falls with more rows
