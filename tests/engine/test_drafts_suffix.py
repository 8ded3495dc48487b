"""Suffix drafts: the online suffix automaton, the own-stream and grouped-pool drafters, and the
choice among drafters by expected accepted tokens."""

import random
from types import SimpleNamespace

from deepinfer import SamplingParams
from deepinfer.engine.speculation.candidates import DraftCandidates, group_of
from deepinfer.engine.speculation.drafts import SOURCE_OWN, SOURCE_SUFFIX_OWN, SOURCE_SUFFIX_POOL, NgramProposer
from deepinfer.engine.speculation.suffix_drafts import OwnSuffixes, SuffixAutomaton, SuffixPool


def brute_earlier_match(tokens):
    """(length, end of first occurrence) of the longest suffix that also ends earlier."""
    n = len(tokens)
    for length in range(n - 1, 0, -1):
        suffix = tokens[n - length:]
        for end in range(length - 1, n - 1):
            if tokens[end - length + 1:end + 1] == suffix:
                return length, end
    return 0, -1


def test_the_automaton_finds_the_longest_earlier_suffix_and_its_first_occurrence():
    rng = random.Random(0)
    for _ in range(300):
        auto = SuffixAutomaton()
        for token in [rng.randrange(3) for _ in range(rng.randrange(1, 40))]:
            auto.extend([token])
            assert auto.earlier_match() == brute_earlier_match(auto.tokens), auto.tokens


def test_own_suffixes_continue_the_first_occurrence_of_a_long_match():
    own = OwnSuffixes()
    prompt = [1, 2, 3, 4, 5, 6, 7, 9, 9]
    own.observe("a", prompt, [1, 2, 3, 4, 5])        # repeats the prompt's first five tokens
    assert own.propose("a", 3, min_match=2) == ([6, 7, 9], 5)
    assert own.propose("a", 3, min_match=6) is None
    own.observe("a", prompt, [1, 2, 3, 4, 5, 8])     # diverged: no earlier "... 5 8"
    assert own.propose("a", 3, min_match=1) is None
    own.release("a")
    assert own.propose("a", 3, min_match=1) is None


def test_the_pool_matches_within_one_group_and_never_across_outputs():
    pool = SuffixPool(pool_tokens=1000)
    pool.add("g", [10, 11, 12, 13])
    pool.add("g", [20, 21, 10, 11])
    pool.add("other", [10, 11, 99])
    assert pool.propose("s", "g", [5, 10, 11], 5, min_match=2) == ([12, 13], 2)   # the first occurrence
    assert pool.propose("s2", "g", [5, 12, 13], 5, min_match=1) is None           # an output's end: nothing follows
    assert pool.propose("t", "other", [10, 11], 5, min_match=2) == ([99], 2)
    assert pool.propose("u", "nobody", [10, 11], 5, min_match=1) is None


def test_a_sequence_match_is_tracked_token_by_token_and_rebuilt_when_the_pool_grows():
    pool = SuffixPool(pool_tokens=1000)
    pool.add("g", [1, 2, 3, 4, 5, 6])
    stream = [9, 1, 2]
    assert pool.propose("s", "g", stream, 2, min_match=2) == ([3, 4], 2)
    stream += [3, 4]
    assert pool.propose("s", "g", stream, 2, min_match=2) == ([5, 6], 4)         # longer match
    pool.add("g", [7, 3, 4, 8])
    assert pool.propose("s", "g", stream, 2, min_match=2) == ([5, 6], 4)         # same answer after the rebuild


def test_a_full_pool_keeps_its_newest_outputs():
    pool = SuffixPool(pool_tokens=12)
    for i in range(6):
        pool.add("g", [100 + i, 1, 2, i])
    assert pool.propose("s", "g", [105, 1, 2], 1, min_match=3) == ([5], 3)
    assert pool.propose("t", "g", [100, 1, 2], 1, min_match=3) is None           # the oldest was dropped


def seq_of(prompt, output=(), **params):
    request = SimpleNamespace(prompt_token_ids=list(prompt), request_id="r")
    return SimpleNamespace(request=request, params=SamplingParams(**params), output_token_ids=list(output),
                           token_ids=list(prompt) + list(output), index=0)


def test_groups_are_the_constraint_or_the_prompt_prefix():
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert group_of(seq_of([1, 2], json_schema=schema)) == group_of(seq_of([3, 4, 5], json_schema=dict(schema)))
    assert group_of(seq_of([1, 2], regex="a+")) != group_of(seq_of([1, 2], regex="b+"))
    shared = list(range(64))
    assert group_of(seq_of(shared + [1])) == group_of(seq_of(shared + [2, 3]))
    assert group_of(seq_of([1] + shared)) != group_of(seq_of(shared))


def test_the_drafter_with_the_most_expected_accepted_tokens_wins():
    candidates = DraftCandidates(NgramProposer(max_ngram=2), pool_tokens=100, min_suffix_match=2,
                                 continue_drafts=False)
    seq = seq_of([1, 2, 3, 4, 5, 6, 7, 1, 2, 3], output=[])
    candidates.observe("k", seq)
    candidates.proposer.observe("k", seq.request.prompt_token_ids, [])
    found = candidates.proposals("k", seq, 4)
    assert [(d.source, d.tokens, d.ngram) for d in found] == [(SOURCE_SUFFIX_OWN, [4, 5, 6, 7], 3),
                                                             (SOURCE_OWN, [4, 5, 6, 7], 2)]
    by_source = {SOURCE_SUFFIX_OWN: 1.0, SOURCE_OWN: 2.0}
    assert candidates.best("k", seq, 4, lambda d: by_source[d.source]).source == SOURCE_OWN
    assert candidates.best("k", seq, 4, lambda d: 0.0) is None
    candidates.release("k", seq_of(seq.request.prompt_token_ids, output=[8, 9, 1, 2, 7]))
    other = seq_of(seq.request.prompt_token_ids, output=[8, 9])             # the same prompt prefix: one group
    candidates.observe("o", other)
    pooled = [d for d in candidates.proposals("o", other, 3) if d.source == SOURCE_SUFFIX_POOL]
    assert pooled and pooled[0].tokens == [1, 2, 7]
