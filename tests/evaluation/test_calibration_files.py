"""The calibration file's split and agreement figures (evaluation/calibration.py): split once by
case digest, at least a third held out, the same request in one part; intervals around agreement
and kappa."""

from __future__ import annotations

import hashlib
import math

import pytest

from evaluation.calibration import (
    HELDOUT,
    assign_parts,
    case_digest,
    compare_labels,
    sample_problems,
)


def _digests(n: int, salt: str = "") -> list[str]:
    return [hashlib.sha256(f"{salt}{i}".encode()).hexdigest() for i in range(n)]


@pytest.mark.parametrize("n", [1, 2, 3, 7, 30, 400])
def test_at_least_a_third_is_held_out_and_the_split_is_deterministic(n):
    digests = _digests(n)
    parts = assign_parts(digests)
    assert sum(p == HELDOUT for p in parts.values()) >= math.ceil(n / 3)
    assert assign_parts(list(reversed(digests))) == parts


def test_a_later_version_keeps_every_earlier_part():
    first = assign_parts(_digests(60))
    later = assign_parts(_digests(60) + _digests(40, salt="new"), previous=first)
    assert {d: later[d] for d in first} == first
    assert sum(p == HELDOUT for p in later.values()) >= math.ceil(100 / 3)


def test_the_digest_is_the_request_not_the_id_nor_the_reply():
    case = {"id": "a@run1", "comments": [{"user": "amy", "text": "price?"}], "products": [1]}
    other_run = {**case, "id": "a@run2", "candidates": [{"id": "x", "reply": "hi"}]}
    assert case_digest(case) == case_digest(other_run)
    assert case_digest(case) != case_digest({**case, "products": [2]})


def test_agreement_and_kappa_come_with_intervals_around_them():
    human = {str(i): i % 2 for i in range(200)}
    judge = {k: (v if int(k) % 10 else 1 - v) for k, v in human.items()}  # 90% agree
    result = compare_labels(human, judge, labels=[0, 1])
    lo, hi = result["agreement_interval"]
    assert lo < result["agreement"] == 0.9 < hi and hi - lo < 0.15
    klo, khi = result["kappa_interval"]
    assert klo < result["kappa"] < khi


def test_a_sample_without_a_category_or_too_small_cannot_decide():
    cases = [{"category": "product_qa", "candidates": [{"id": "c", "reply": "r", "human": {}}]}] * 3
    problems = sample_problems(cases, min_replies=5)
    assert "3 labelled replies; a calibration needs at least 5" in problems[0]
    assert "greeting" in problems[1]
