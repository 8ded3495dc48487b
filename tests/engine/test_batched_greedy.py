"""The verifier's greedy fast path (one batched argmax, recomputed for masked rows only) picks
what the sampler picks row by row: the first maximal index after penalties and masks."""

from types import SimpleNamespace

import torch

from deepinfer.engine.speculation.verify import Row, sample_rows
from deepinfer.sampling import SamplingRow, sample
from deepinfer.types import SamplingParams


class _OnlyToken:
    """A constraint that allows one token (a stand-in for a Matcher)."""

    def __init__(self, token):
        self.token, self.accepted = token, 0

    def accept_token(self, token):
        if token == self.token and not self.accepted:
            self.accepted = 1
            return True
        return False

    def rollback(self, n):
        self.accepted -= n

    def fill_next_token_bitmask(self, bitmask, row):
        bitmask[row] = 0
        bitmask[row, self.token // 32] = 1 << (self.token % 32)


def _seq(params, matcher=None):
    return SimpleNamespace(params=params, seed=3, num_tokens=10, output_token_ids=[5], draft=[], matcher=matcher,
                           request=SimpleNamespace(prompt_token_ids=[1, 2]))


def _reference(logits, seqs):
    """Row by row: penalties, the constraint's one token, the sampler."""
    out = []
    for i, seq in enumerate(seqs):
        row = logits[i:i + 1].clone()
        if seq.matcher is not None:
            keep = row[0, seq.matcher.token].clone()
            row[:] = -torch.inf
            row[0, seq.matcher.token] = keep
        out.append(sample(row, [SamplingRow(seq.params, seq.seed, 10, [1, 2], [5])]).token_ids[0])
    return out


def test_greedy_fast_path_matches_the_sampler_row_by_row():
    torch.manual_seed(0)
    logits = torch.randn(5, 300)
    logits[1, 7] = logits[1, 250] = 50.0               # a tie: the first index wins
    logits[3, :] = 1.0                                 # all equal
    greedy = SamplingParams(temperature=0)
    seqs = [_seq(greedy), _seq(greedy), _seq(greedy, _OnlyToken(123)), _seq(greedy), _seq(greedy, _OnlyToken(250))]
    tokens, logprobs = sample_rows([Row(s, 0) for s in seqs], logits.clone(), frozenset())
    assert tokens == _reference(logits, seqs) and logprobs == [None] * 5
    assert tokens[1] == 7 and tokens[2] == 123 and tokens[3] == 0 and tokens[4] == 250
    mixed = seqs[:4] + [_seq(SamplingParams(temperature=0.8, seed=1))]   # the sampler's path
    assert sample_rows([Row(s, 0) for s in mixed], logits.clone(), frozenset())[0] == _reference(logits, mixed)
