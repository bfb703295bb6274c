"""Dataset import: names are ASCII slugs, and a case whose text holds a raw U+2028 stays one
case."""

import json

import pytest

from studio.evolution.errors import EvolutionError
from studio.evolution.models import Dataset
from studio.evolution.services.datasets import dataset_import

pytestmark = pytest.mark.django_db


def test_a_dataset_name_is_an_ascii_slug(personas, demo_sets_dir):
    text = (demo_sets_dir / "dev.jsonl").read_text(encoding="utf-8").splitlines()[0]
    with pytest.raises(EvolutionError, match="name: use 1-80 of a-z, 0-9, '-' or '_' .*not 'café'"):
        dataset_import(name="café", text=text, source="dev.jsonl", actor=personas.operator)
    assert not Dataset.objects.exists()


def test_a_raw_line_separator_inside_a_case_does_not_split_it(personas, demo_sets_dir):
    case = json.loads((demo_sets_dir / "dev.jsonl").read_text(encoding="utf-8").splitlines()[0])
    case["comments"][0]["text"] += "\u2028(sent from a phone)"
    text = json.dumps(case, ensure_ascii=False)  # leaves U+2028 raw, as many exporters do
    assert "\u2028" in text
    dataset = dataset_import(
        name="one-case", text=text, source="phone.jsonl", actor=personas.operator
    )
    assert dataset.cases.count() == 1
