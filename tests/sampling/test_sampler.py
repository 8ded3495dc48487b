import torch

from deepinfer.sampling import SamplingRow, apply_penalties, find_stop, holdback, sample
from deepinfer.sampling.noise import derive_seed, uniform
from deepinfer.types import SamplingParams


def row(params, seed=0, position=0, prompt=(), output=()):
    return SamplingRow(params, seed, position, list(prompt), list(output))


def test_noise_is_a_pure_function_of_seed_and_position():
    a = uniform(torch.tensor([5, 6]), torch.tensor([3, 3]), 1000)
    b = uniform(torch.tensor([6]), torch.tensor([3]), 1000)
    assert torch.equal(a[1], b[0]) and not torch.equal(a[0], a[1])
    assert 0 < a.min() and a.max() < 1
    assert derive_seed(7, 0) == 7 and derive_seed(7, 1) != derive_seed(7, 2)


def test_gumbel_max_samples_the_softmax_distribution():
    logits = torch.tensor([[0.0, 1.0, 2.0, -1.0]])
    p = SamplingParams(temperature=1.0)
    counts = torch.zeros(4)
    for position in range(4000):
        counts[sample(logits.clone(), [row(p, seed=1, position=position)]).token_ids[0]] += 1
    expected = torch.softmax(logits[0], -1) * 4000
    assert torch.all((counts - expected).abs() < 5 * expected.sqrt() + 5), (counts, expected)


def test_greedy_and_truncation():
    logits = torch.tensor([[0.0, 3.0, 2.9, 2.8, -5.0]])
    assert sample(logits.clone(), [row(SamplingParams(temperature=0))]).token_ids == [1]
    for params, allowed in [(SamplingParams(top_k=2), {1, 2}), (SamplingParams(top_p=0.3), {1}),
                            (SamplingParams(min_p=0.9), {1, 2})]:
        seen = {sample(logits.clone(), [row(params, seed=3, position=i)]).token_ids[0] for i in range(200)}
        assert seen <= allowed and len(seen) == len(allowed), (params, seen)


def test_penalties_and_bias():
    logits = torch.tensor([[2.0, 2.0, -1.0, 0.0]])
    apply_penalties(logits, [row(SamplingParams(repetition_penalty=2.0, logit_bias={3: 5.0}), prompt=[0, 2])])
    assert logits.tolist() == [[1.0, 2.0, -2.0, 5.0]]
    logits = torch.zeros(1, 3)
    apply_penalties(logits, [row(SamplingParams(presence_penalty=0.5, frequency_penalty=0.25), output=[1, 1])])
    assert logits.tolist() == [[0.0, -1.0, 0.0]]


def test_logprobs_with_alternatives():
    logits = torch.log(torch.tensor([[0.5, 0.25, 0.25]]))
    out = sample(logits, [row(SamplingParams(temperature=0, logprobs=2))])
    lp = out.logprobs[0]
    assert lp.token_id == 0 and abs(lp.logprob - torch.log(torch.tensor(0.5)).item()) < 1e-6
    assert len(lp.top) == 2 and 0 in lp.top


def test_masked_tokens_are_no_logprob_alternatives():
    """A constraint leaves two tokens: asking for 4 alternatives gives those 2 (finite: -inf would
    be no token, and is not JSON)."""
    logits = torch.tensor([[1.0, -torch.inf, 2.0, -torch.inf, -torch.inf]])
    lp = sample(logits, [row(SamplingParams(temperature=0, logprobs=4))]).logprobs[0]
    assert lp.token_id == 2 and set(lp.top) == {0, 2}
    assert all(v > float("-inf") for v in lp.top.values())


def test_stop_strings_and_holdback():
    assert find_stop("hello world", ["wor", "lo"]) == (3, "lo")
    assert find_stop("abc", ["x"]) is None
    assert holdback("the en", ["end", "x"]) == 2
    assert holdback("the end", ["endless"]) == 3
    assert holdback("abc", ["zz"]) == 0
