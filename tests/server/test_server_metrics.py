"""`GET /metrics` over real HTTP: requests made, then the scrape parsed as Prometheus text."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from server_helpers import LiveServer, engine_state

CHAT = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}]}
HISTOGRAMS = ("deepinfer:time_to_first_token_seconds", "deepinfer:time_per_output_token_seconds",
              "deepinfer:e2e_request_latency_seconds", "deepinfer:request_queue_time_seconds",
              "deepinfer:constraint_compile_time_seconds")


@pytest.fixture()
def live(tiny_engine):
    """A server of its own: its registry starts empty, whatever other servers counted."""
    with LiveServer(engine_state(tiny_engine, default_max_tokens=8, json_whitespace="compact")) as server:
        yield server


def scrape(server) -> dict[str, dict]:
    """family name -> {(sample name, sorted labels): value}."""
    response = httpx.get(server.url + "/metrics", timeout=30)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    families = {}
    for family in text_string_to_metric_families(response.text):
        families[family.name] = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in family.samples}
    return families


def sample(families: dict, family: str, name: str, **labels) -> float:
    return families[family][(name, tuple(sorted(labels.items())))]


def chat(server, **extra) -> dict:
    r = httpx.post(server.url + "/v1/chat/completions", json={**CHAT, **extra}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def test_histograms_count_every_finished_choice(live):
    one = chat(live, regex="[a-z]{6}", max_tokens=6, seed=1)
    two = chat(live, structured_outputs={"choice": ["alpha", "gamma"]}, n=2, seed=2)
    free = chat(live, max_tokens=5, seed=3)
    families = scrape(live)
    for name in HISTOGRAMS:
        assert families[name], f"{name} is not exposed"
        assert sample(families, name, name + "_bucket", le="+Inf") == sample(families, name, name + "_count")
    choices = len(one["choices"]) + len(two["choices"]) + len(free["choices"])
    assert choices == 4
    for name in ("deepinfer:e2e_request_latency_seconds", "deepinfer:time_to_first_token_seconds",
                 "deepinfer:request_queue_time_seconds"):
        assert sample(families, name, name + "_count") == choices, name
        assert sample(families, name, name + "_sum") > 0, name
    # a choice's per-token time needs two tokens or more; each of these requests has one choice of
    # `completion_tokens` tokens (the n=2 request's two choices may differ, so they bound it)
    single = [r["usage"]["completion_tokens"] for r in (one, free)]
    tpot = sample(families, "deepinfer:time_per_output_token_seconds",
                  "deepinfer:time_per_output_token_seconds_count")
    assert sum(n > 1 for n in single) <= tpot <= sum(n > 1 for n in single) + 2
    compiles = sample(families, "deepinfer:constraint_compile_time_seconds",
                      "deepinfer:constraint_compile_time_seconds_count")
    assert compiles == 2  # the regex and the choice; the free-text request compiles nothing


def test_counters_and_engine_gauges(live):
    chat(live, max_tokens=3, regex="[0-9]{3}")
    refused = httpx.post(live.url + "/v1/chat/completions", json={**CHAT, "regex": "("}, timeout=30)
    assert refused.status_code == 400
    families = scrape(live)
    route = "/v1/chat/completions"
    assert sample(families, "deepinfer_requests", "deepinfer_requests_total", route=route, status="200") == 1
    assert sample(families, "deepinfer_requests", "deepinfer_requests_total", route=route, status="400") == 1
    assert sample(families, "deepinfer_generation_tokens", "deepinfer_generation_tokens_total") >= 3
    assert sample(families, "deepinfer_prompt_tokens", "deepinfer_prompt_tokens_total") > 0
    assert sample(families, "deepinfer_constraint_compile_errors", "deepinfer_constraint_compile_errors_total") == 1
    assert sample(families, "deepinfer_requests_in_flight", "deepinfer_requests_in_flight") == 1  # the scrape
    for gauge in ("deepinfer_queue_waiting_requests", "deepinfer_running_requests", "deepinfer_kv_cache_usage_ratio",
                  "deepinfer_prefix_cache_hit_rate"):
        assert 0 <= sample(families, gauge, gauge) <= 1e9, gauge
    assert sample(families, "deepinfer_engine_steps", "deepinfer_engine_steps_total") > 0


def test_each_server_counts_only_its_own_requests(live, tiny_engine):
    with LiveServer(engine_state(tiny_engine, default_max_tokens=4)) as other:
        chat(other, max_tokens=2, seed=4)
        chat(other, max_tokens=2, seed=5)
        theirs, ours = scrape(other), scrape(live)
    name = "deepinfer:e2e_request_latency_seconds"
    assert sample(theirs, name, name + "_count") == 2
    assert sample(ours, name, name + "_count") == 0
    assert ("deepinfer_requests_total", (("route", "/v1/chat/completions"), ("status", "200"))) \
        not in ours["deepinfer_requests"]
