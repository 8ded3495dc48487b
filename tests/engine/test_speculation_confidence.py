"""The survival model: binned acceptance shrunk towards an online logistic regression, its
calibration report, and the per-request recent acceptance it reads."""

import random

import pytest

from deepinfer.engine.speculation.confidence import (AFTER_FORCED, CONSTRAINED, FREE, Calibration,
                                                     RecentAcceptance, SurvivalModel, match_bucket)
from deepinfer.engine.speculation.drafts import SOURCE_OWN, SOURCE_SUFFIX_OWN, SOURCE_TEXT


def key(source=SOURCE_OWN, match=2, position=1, greedy=True, structural=False, context=FREE, recent=5):
    return source, match, position, greedy, structural, context, recent


def test_trials_count_up_to_the_first_miss_and_forced_tokens_are_no_trials():
    model = SurvivalModel()
    keys = [key(position=1), None, key(position=2), key(position=3)]   # the second token was forced
    model.record(keys, [0.9, 0.9, 0.6, 0.3], verified=4, matched=2)
    assert model.counts[key(position=1)] == [1, 1] and model.counts[key(position=2)] == [0, 1]
    assert key(position=3) not in model.counts                        # after the miss: not a trial
    assert model.confidence(None) == 1.0
    assert sum(model.calibration.count) == 4                          # every verified position is scored


def test_confidence_learns_each_bin_and_generalizes_to_unseen_ones():
    rng = random.Random(0)
    model = SurvivalModel()
    good, bad = key(source=SOURCE_SUFFIX_OWN, match=8), key(source=SOURCE_TEXT, match=2)
    for _ in range(300):
        for k, rate in ((good, 0.9), (bad, 0.1)):
            accepted = rng.random() < rate
            model.record([k], [model.confidence(k)], verified=1, matched=int(accepted))
        model.refit()
    assert model.confidence(good) > 0.8 and model.confidence(bad) < 0.2
    unseen_good = key(source=SOURCE_SUFFIX_OWN, match=8, position=2)
    unseen_bad = key(source=SOURCE_TEXT, match=2, position=2)
    assert model.confidence(unseen_good) > model.confidence(unseen_bad) + 0.3   # the regression carries over


def test_a_few_rejections_do_not_silence_a_drafter():
    """Early outcomes move the regression gently: after two rejections c stays near its start."""
    model = SurvivalModel()
    k = key()
    start = model.confidence(k)
    model.record([k], [start], 1, 0)
    model.record([k], [start], 1, 0)
    model.refit()
    assert model.confidence(k) > 0.5 * start


def test_calibration_error_is_the_count_weighted_gap_by_decile():
    cal = Calibration()
    assert cal.expected_error() is None
    for _ in range(10):
        cal.add(0.95, True)           # decile 9: predicted 0.95, observed 1.0
    for i in range(10):
        cal.add(0.25, i < 5)          # decile 2: predicted 0.25, observed 0.5
    assert cal.expected_error() == pytest.approx((10 * 0.05 + 10 * 0.25) / 20)
    assert cal.table() == [(2, 10, pytest.approx(0.25), 0.5), (9, 10, pytest.approx(0.95), 1.0)]
    cal.add(1.0, True)
    assert cal.count[9] == 11          # a survival of 1 falls in the top decile


def test_recent_acceptance_follows_each_sequence_and_starts_from_the_overall_rate():
    recent = RecentAcceptance(weight=0.5)
    assert recent.decile("a") == 5                         # Beta(1, 1): one half
    recent.record("a", verified=4, accepted=4)
    assert recent.decile("a") == 7                         # 0.5 -> 0.75
    recent.record("a", verified=4, accepted=4)
    assert recent.decile("a") == 8
    assert recent.decile("b") == int(10 * 9 / 10)         # a new sequence: overall 9 of 10
    recent.forget("a")
    assert recent.decile("a") == recent.decile("b")


def test_keys_bucket_match_lengths_and_describe_the_constraint():
    assert [match_bucket(n) for n in (1, 2, 5, 7, 13, 100)] == [1, 2, 6, 8, 16, 32]
    model = SurvivalModel()
    for context in (FREE, CONSTRAINED, AFTER_FORCED):
        assert 0 < model.confidence(key(context=context)) < 1


def test_free_text_outcomes_do_not_borrow_a_drafters_constrained_rate():
    """A drafter that copies extraction values (constrained) well and free text badly is
    predicted low on free text after a few dozen free outcomes, and stays high where constrained."""
    rng = random.Random(1)
    model = SurvivalModel()
    for _ in range(300):
        for match in (2, 4, 8):
            k = key(source=SOURCE_TEXT, match=match, context=CONSTRAINED, recent=8)
            model.record([k], [model.confidence(k)], 1, int(rng.random() < 0.9))
        model.refit()
    unseen_free = key(source=SOURCE_TEXT, match=3, context=FREE, recent=8)
    before = model.confidence(unseen_free)
    for _ in range(30):
        for match in (2, 4, 8):
            k = key(source=SOURCE_TEXT, match=match, context=FREE, recent=8)
            model.record([k], [model.confidence(k)], 1, int(rng.random() < 0.05))
        model.refit()
    assert model.confidence(unseen_free) < min(0.3, before - 0.3)
    assert model.confidence(key(source=SOURCE_TEXT, match=3, context=CONSTRAINED, recent=8)) > 0.75


def test_a_new_sequence_starts_at_the_rate_of_sequences_like_it():
    recent = RecentAcceptance()
    for i in range(20):
        recent.record(("json", i), verified=10, accepted=9, constrained=True)
        recent.record(("chat", i), verified=10, accepted=1, constrained=False)
    assert recent.decile("new json", constrained=True) == 8
    assert recent.decile("new chat", constrained=False) == 1
