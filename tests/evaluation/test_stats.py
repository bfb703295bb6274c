"""Statistics: bootstrap against the slow reference, breakdowns and judge calibration."""

import numpy as np
import pytest

from evaluation.stats import (
    calibrate,
    category_breakdown,
    cohen_kappa,
    paired_bootstrap,
    paired_bootstrap_reference,
)


def test_vectorised_bootstrap_matches_slow_reference():
    rng = np.random.default_rng(7)
    base = rng.integers(0, 2, size=60).astype(float)
    cand = np.clip(base + rng.choice([-1, 0, 0, 1], size=60), 0, 1)
    fast = paired_bootstrap(baseline=base, candidate=cand, resamples=2_500, seed=3)
    slow = paired_bootstrap_reference(baseline=base, candidate=cand, resamples=2_500, seed=3)
    assert fast.delta == pytest.approx(slow.delta)
    assert fast.low == pytest.approx(slow.low, abs=1e-12)
    assert fast.high == pytest.approx(slow.high, abs=1e-12)
    assert fast.p_delta_le_zero == slow.p_delta_le_zero


def test_bootstrap_detects_a_clear_regression_and_not_noise():
    base = [1.0] * 200
    worse = [1.0] * 150 + [0.0] * 50
    result = paired_bootstrap(baseline=base, candidate=worse)
    assert result.resamples == 10_000
    assert result.delta == pytest.approx(-0.25)
    assert result.high < 0 and result.low < result.delta < result.high
    assert result.p_delta_le_zero == 1.0
    same = paired_bootstrap(baseline=base, candidate=base)
    assert same.low == same.high == 0.0


def test_bootstrap_rejects_unpaired_inputs():
    with pytest.raises(ValueError, match="equally long"):
        paired_bootstrap(baseline=[1, 0], candidate=[1])


def test_category_breakdown_skips_unscored_rows():
    rows = [
        {"category": "product_qa", "accuracy": 1},
        {"category": "product_qa", "accuracy": 0},
        {"category": "chitchat", "accuracy": 1},
        {"category": "chitchat", "accuracy": None},
    ]
    stats = category_breakdown(rows=rows, metric="accuracy")
    assert stats["product_qa"].mean == 0.5 and stats["product_qa"].n == 2
    assert stats["chitchat"].n == 1
    assert stats["ALL"].mean == pytest.approx(2 / 3)


def test_calibration_confusion_kappa_and_disagreements():
    human = {"a": 1, "b": 1, "c": 0, "d": 0, "e": 1}
    judge = {"a": 1, "b": 0, "c": 0, "d": 0, "e": 1, "x": 1}
    cal = calibrate(human=human, judge=judge, labels=[0, 1])
    assert cal.n == 5 and cal.agreement == pytest.approx(0.8)
    assert cal.confusion == [[2, 0], [1, 2]]
    assert cal.disagreements == [{"id": "b", "human": 1, "judge": 0}]
    # po = 0.8, pe = (2*3 + 3*2)/25 = 0.48 -> kappa = 0.32/0.52
    assert cal.kappa == pytest.approx(0.32 / 0.52)


def test_kappa_is_zero_for_chance_agreement():
    pairs = [(1, 1), (1, 0), (0, 1), (0, 0)]
    assert cohen_kappa(pairs) == pytest.approx(0.0)
