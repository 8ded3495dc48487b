"""End-to-end generation on a tiny random model: correctness against a dense reference, and the
sampling features that reach the caller (stop strings, stop ids, n, logprobs, limits)."""

import pytest
import torch

from deepinfer import SamplingParams
from deepinfer.model.kv import DenseKVCache
from deepinfer.types import FinishReason

PROMPTS = ["hello world", "the quick brown fox jumps", "a", "JSON: {\"name\": \"Ada\"}"]


def dense_greedy(model, ids, steps):
    cache, out = DenseKVCache(model.config.num_layers), []
    tokens = list(ids)
    with torch.no_grad():
        logits = model.forward(torch.tensor(tokens), torch.arange(len(tokens)), cache)[-1]
        for _ in range(steps):
            out.append(int(torch.argmax(logits)))
            pos = len(tokens) + len(out) - 1
            logits = model.forward(torch.tensor(out[-1:]), torch.tensor([pos]), cache)[-1]
    return out


@pytest.mark.parametrize("family", ["llama", "deepseek", "mistral-sliding"])
def test_greedy_matches_dense_single_sequence_decode(make_llm, tiny, family):
    llm = make_llm(family, block_size=4, max_num_batched_tokens=8)  # chunked prefill, several blocks
    model, tok = tiny(family)
    params = SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)
    outs = llm.generate(PROMPTS, params)
    for prompt, out in zip(PROMPTS, outs):
        assert out.token_ids == dense_greedy(model, tok.encode(prompt), 12), prompt
        assert out.finish_reason == FinishReason.LENGTH
        assert out.text == tok.decode(out.token_ids)


def test_default_non_invariant_path_matches_dense(make_llm, tiny):
    llm = make_llm(batch_invariant=False, block_size=4, max_num_batched_tokens=8)
    model, tok = tiny()
    outs = llm.generate(PROMPTS, SamplingParams(temperature=0, max_tokens=8, ignore_eos=True))
    for prompt, out in zip(PROMPTS, outs):
        assert out.token_ids == dense_greedy(model, tok.encode(prompt), 8), prompt


def test_stop_string_is_cut_and_never_streamed(make_llm):
    llm = make_llm()
    base = llm.generate("hello", SamplingParams(temperature=0, max_tokens=20, ignore_eos=True))[0]
    stop = base.text[5:8]
    assert len(stop) == 3
    out = llm.generate("hello", SamplingParams(temperature=0, max_tokens=20, stop=[stop], ignore_eos=True))[0]
    assert out.finish_reason == FinishReason.STOP and out.outputs[0].stop_reason == stop
    assert out.text == base.text[:base.text.index(stop)]
    streamed = list(llm.stream("hello", SamplingParams(temperature=0, max_tokens=20, stop=[stop], ignore_eos=True)))
    assert "".join(streamed) == out.text
    kept = llm.generate("hello", SamplingParams(temperature=0, max_tokens=20, stop=[stop], ignore_eos=True,
                                                include_stop_str_in_output=True))[0]
    assert kept.text == out.text + stop


def test_stop_token_ids_and_max_tokens(make_llm):
    llm = make_llm()
    base = llm.generate("hello", SamplingParams(temperature=0, max_tokens=10, ignore_eos=True))[0]
    target = base.token_ids[4]
    out = llm.generate("hello", SamplingParams(temperature=0, max_tokens=10, stop_token_ids=[target],
                                               ignore_eos=True))[0]
    first = base.token_ids.index(target)
    assert out.token_ids == base.token_ids[:first + 1]
    assert out.finish_reason == FinishReason.STOP and out.outputs[0].stop_reason == target
    assert len(base.token_ids) == 10 and base.finish_reason == FinishReason.LENGTH


def test_eos_is_banned_until_min_tokens(make_llm, tiny):
    llm = make_llm()
    _, tok = tiny()
    eos = min(tok.eos_token_ids)
    out = llm.generate("hi", SamplingParams(temperature=0, max_tokens=8, min_tokens=8,
                                            logit_bias={eos: 100.0}))[0]
    assert len(out.token_ids) == 8 and eos not in out.token_ids
    out = llm.generate("hi", SamplingParams(temperature=0, max_tokens=8, logit_bias={eos: 100.0}))[0]
    assert out.token_ids == [eos] and out.finish_reason == FinishReason.STOP and out.text == ""


def test_n_completions_and_logprobs(make_llm):
    llm = make_llm()
    params = SamplingParams(n=3, temperature=1.0, seed=5, max_tokens=6, ignore_eos=True, logprobs=3)
    out = llm.generate("hello", params)[0]
    assert [o.index for o in out.outputs] == [0, 1, 2]
    assert len({tuple(o.token_ids) for o in out.outputs}) > 1
    single = llm.generate("hello", SamplingParams(n=1, temperature=1.0, seed=5, max_tokens=6, ignore_eos=True))[0]
    assert single.token_ids == out.outputs[0].token_ids           # completion 0 keeps the request's seed
    for o in out.outputs:
        assert len(o.logprobs) == 6
        for token, lp in zip(o.token_ids, o.logprobs):
            assert lp.token_id == token and lp.logprob <= 0 and len(lp.top) == 3
            assert max(lp.top.values()) >= lp.logprob


def test_params_per_prompt_and_bad_input(make_llm):
    import pytest

    from deepinfer.errors import UserError

    llm = make_llm()
    outs = llm.generate(["a", "b"], [SamplingParams(max_tokens=2, ignore_eos=True),
                                     SamplingParams(max_tokens=3, ignore_eos=True)])
    assert [len(o.token_ids) for o in outs] == [2, 3]
    with pytest.raises(UserError, match="one per prompt"):
        llm.generate(["a", "b"], [SamplingParams()])
    with pytest.raises(UserError, match="at most one constraint"):
        SamplingParams(regex="a", grammar="start: \"a\"")
    with pytest.raises(UserError, match="top_p"):
        SamplingParams(top_p=0)


def test_chat_uses_the_template(make_llm):
    llm = make_llm()
    out = llm.chat([{"role": "user", "content": "hi"}], SamplingParams(temperature=0, max_tokens=3))[0]
    assert "<|im_start|>assistant" in out.prompt
