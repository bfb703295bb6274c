"""Group failed cases into causes: judge reason codes first, then text similarity.

Two failures share a cause when they carry the same leading judge reason code
and their texts (viewer comment, reply, judge notes) are alike. Within one
reason code, cases are grouped by average-linkage agglomerative clustering on
TF-IDF vectors (word unigrams and bigrams, cosine similarity, numpy only): the
two closest groups merge while their average similarity stays above a
threshold. Clusters are ranked by the score they cost (sum of 2 - Acc - Eff
over their cases), and each keeps its most central cases as representatives. A
cluster is named by the words its viewers' comments share and other failures'
comments rarely hold (:func:`naming_terms`), not by the reply or the fallback text
every failure carries.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from evaluation.diagnosis.records import FailureCase

_TOKEN = re.compile(r"[a-z][a-z']+|\d+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "so",
        "that",
        "the",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "which",
        "will",
        "with",
        "you",
        "your",
        "yes",
    ]
)
NO_REASON = "unexplained"


def tokens(text: str) -> list[str]:
    words = [w for w in _TOKEN.findall(text.lower()) if w not in _STOP and not w.isdigit()]
    return words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]


def tfidf_matrix(texts: list[str]) -> tuple[np.ndarray, list[str]]:
    """Row-normalised TF-IDF vectors (sublinear tf, smoothed idf) and the vocabulary."""
    docs = [Counter(tokens(t)) for t in texts]
    vocab = sorted({term for doc in docs for term in doc})
    if not vocab:
        return np.zeros((len(texts), 0)), []
    index = {term: i for i, term in enumerate(vocab)}
    matrix = np.zeros((len(texts), len(vocab)))
    for row, doc in enumerate(docs):
        for term, count in doc.items():
            matrix[row, index[term]] = 1.0 + math.log(count)
    df = (matrix > 0).sum(axis=0)
    matrix *= np.log((1 + len(texts)) / (1 + df)) + 1.0
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms), vocab


def agglomerate(similarity: np.ndarray, *, threshold: float) -> list[list[int]]:
    """Average-linkage clustering: merge the closest pair while its mean similarity >= threshold."""
    groups = [[i] for i in range(similarity.shape[0])]
    while len(groups) > 1:
        best, pair = -1.0, None
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                score = float(similarity[np.ix_(groups[a], groups[b])].mean())
                if score > best:
                    best, pair = score, (a, b)
        if pair is None or best < threshold:
            break
        a, b = pair
        groups[a] = groups[a] + groups[b]
        del groups[b]
    return groups


@dataclass
class Cluster:
    """One cause: failed cases sharing a reason code and similar text."""

    reason: str
    cases: list[FailureCase]
    top_terms: list[str] = field(default_factory=list)
    representatives: list[FailureCase] = field(default_factory=list)

    @property
    def cost(self) -> float:
        """Score lost on these cases (each case can lose up to 2: Accuracy and Effectiveness)."""
        return sum(2.0 - c.accuracy - c.effectiveness for c in self.cases)

    @property
    def categories(self) -> Counter:
        return Counter(c.category for c in self.cases)

    @property
    def case_ids(self) -> list[str]:
        return [c.case_id for c in self.cases]

    def label(self) -> str:
        cats = ", ".join(f"{k} {v}" for k, v in self.categories.most_common(3))
        terms = ", ".join(self.top_terms[:4])
        return f"{self.reason} ({cats})" + (f": {terms}" if terms else "")

    def to_dict(self) -> dict:
        return {
            "reason": self.reason,
            "label": self.label(),
            "size": len(self.cases),
            "cost": round(self.cost, 3),
            "categories": dict(self.categories),
            "top_terms": self.top_terms,
            "case_ids": self.case_ids,
            "representatives": [c.to_dict() for c in self.representatives],
        }


def naming_terms(
    members: list[FailureCase], failures: list[FailureCase], *, most: int = 4
) -> list[str]:
    """Words that name a cluster: from its viewers' comments (what was asked, not the reply or the
    fallback text every failure shares), shared by several of its cases (a third, at least two, when
    it has more than one) and rare among all the failures, best first."""

    def words(case: FailureCase) -> set[str]:
        return {
            w.strip("'")
            for w in _TOKEN.findall(case.comment.lower())
            if len(w) > 2 and w not in _STOP and not w.isdigit()
        }

    everywhere = Counter(word for case in failures for word in words(case))
    here = Counter(word for case in members for word in words(case))
    needed = 1 if len(members) == 1 else max(2, math.ceil(len(members) / 3))
    scored = [
        (here[w] / len(members) * math.log((1 + len(failures)) / (1 + everywhere[w])), w)
        for w in here
        if here[w] >= needed and everywhere[w] < len(failures)
    ]
    return [w for _score, w in sorted(scored, key=lambda item: (-item[0], item[1]))[:most]]


def _split(
    reason: str,
    cases: list[FailureCase],
    *,
    threshold: float,
    representatives: int,
    failures: list[FailureCase],
) -> list[Cluster]:
    matrix, _vocab = tfidf_matrix([c.text for c in cases])
    if matrix.shape[1] == 0:
        groups = [list(range(len(cases)))]
    else:
        groups = agglomerate(matrix @ matrix.T, threshold=threshold)
    clusters = []
    for group in groups:
        members = [cases[i] for i in group]
        central = list(group)
        if matrix.shape[1]:
            centroid = matrix[group].mean(axis=0)
            central = [group[i] for i in np.argsort(-(matrix[group] @ centroid), kind="stable")]
        clusters.append(
            Cluster(
                reason=reason,
                cases=members,
                top_terms=naming_terms(members, failures),
                representatives=[cases[i] for i in central[:representatives]],
            )
        )
    return clusters


def cluster_failures(
    failures: list[FailureCase],
    *,
    threshold: float = 0.12,
    representatives: int = 3,
    min_size: int = 1,
) -> list[Cluster]:
    """Clusters of ``failures`` ranked by cost (largest first), ties by size then reason."""
    by_reason: dict[str, list[FailureCase]] = {}
    for case in failures:
        by_reason.setdefault(case.reasons[0] if case.reasons else NO_REASON, []).append(case)
    clusters: list[Cluster] = []
    for reason, cases in by_reason.items():
        clusters += _split(
            reason, cases, threshold=threshold, representatives=representatives, failures=failures
        )
    clusters = [c for c in clusters if len(c.cases) >= min_size]
    clusters.sort(key=lambda c: (-c.cost, -len(c.cases), c.reason))
    return clusters
