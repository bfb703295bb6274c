"""Writes of evolution datasets: an all-or-nothing JSONL import, split into dev and held-out cases.

Each case goes to the *dev* or *held-out* split by a hash of its id, so a
re-import puts every case in the same split; held-out cases are evaluated but
never shown to a diagnoser.
"""

from __future__ import annotations

import hashlib
import re

from django.contrib.auth.models import User
from django.db import transaction

from harness.jsonl import split_lines
from studio.audit.services import audit_record
from studio.evolution.errors import EvolutionError
from studio.evolution.models import Dataset, DatasetCase


def _split_of(case_id: str, heldout_share: float) -> str:
    bucket = int(hashlib.sha256(case_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return DatasetCase.HELDOUT if bucket < heldout_share else DatasetCase.DEV


def _comment_of(case: dict) -> str:
    from evaluation.diagnosis.records import comment_text

    return comment_text(case)[:500]


@transaction.atomic
def dataset_import(
    *,
    name: str,
    text: str,
    source: str,
    actor: User | None,
    catalogue: dict | None = None,
    description: str = "",
    heldout_share: float = 0.2,
) -> Dataset:
    """Import a JSONL case file all or nothing; bad lines raise CaseFileError with their line
    numbers."""
    from evaluation.cases import parse_cases
    from harness.livestream import Catalogue, DocumentValidationError

    name = name.strip().lower()
    if not re.fullmatch(r"[a-z0-9_-]{1,80}", name):  # isalnum() would take 'café'
        raise EvolutionError(f"name: use 1-80 of a-z, 0-9, '-' or '_' (e.g. dev-482), not {name!r}")
    if Dataset.objects.filter(name=name).exists():
        raise EvolutionError(f"name: a dataset called {name!r} exists already; pick another name")
    if not 0 <= heldout_share <= 0.5:
        raise EvolutionError(f"heldout_share: {heldout_share} must be between 0 and 0.5")
    if catalogue is not None:
        try:
            Catalogue.from_dict(catalogue, source=f"{source} catalogue")
        except DocumentValidationError as error:
            raise EvolutionError(f"catalogue: {error}") from None
    lines = split_lines(text)
    cases = parse_cases(lines, source=source)
    numbers = [i for i, line in enumerate(lines, 1) if line.strip()]
    dataset = Dataset.objects.create(
        name=name,
        description=description,
        source=source,
        catalogue=catalogue,
        heldout_share=heldout_share,
        case_count=len(cases),
        created_by=actor,
    )
    DatasetCase.objects.bulk_create(
        [
            DatasetCase(
                dataset=dataset,
                case_id=case["id"],
                position=i,
                line=numbers[i - 1],
                category=case["category"],
                split=_split_of(case["id"], heldout_share),
                comment=_comment_of(case),
                data=case,
            )
            for i, case in enumerate(cases, 1)
        ],
        batch_size=500,
    )
    audit_record(
        actor=actor,
        action="evolution.dataset.import",
        target=f"dataset {name}",
        data={"cases": len(cases), "source": source},
    )
    return dataset


MAX_LISTED_PROBLEMS = 50
"""A page lists the first problems of an import; the rest are counted (100,000 bad lines are one
line more)."""


def problems_listed(*, problems: list) -> list[str]:
    """The first MAX_LISTED_PROBLEMS problems as text, and a last line counting the others."""
    listed = [str(p) for p in problems[:MAX_LISTED_PROBLEMS]]
    if len(problems) > MAX_LISTED_PROBLEMS:
        listed.append(
            f"... and {len(problems) - MAX_LISTED_PROBLEMS:,} "
            "more problems (fix these and import again)"
        )
    return listed


def dataset_catalogue_from_text(*, text: str, source: str) -> dict:
    """The catalogue file's JSON object, read by the one bounded reader (nesting capped)."""
    from harness.userfiles import parse_json

    data = parse_json(text, source=source, what="catalogue", error=EvolutionError)
    if not isinstance(data, dict):
        raise EvolutionError(
            f"{source}: catalogue must be a JSON object with products, promotions, faq"
        )
    return data
