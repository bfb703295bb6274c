"""seed_evolution_demo: the generated dev-set as a dataset and the scripted-shortcut endpoint, idempotently."""

import pytest
from django.core.management import call_command

from studio.evolution.models import Dataset, DatasetCase
from studio.evolution.seeding import SHORTCUT_ENDPOINT, evolution_demo_seed

pytestmark = pytest.mark.django_db


def test_seed_imports_the_482_case_dev_set_once(personas, tmp_path, settings, capsys):
    settings.VAR_DIR = tmp_path
    call_command("seed_evolution_demo", "--sets", "dev")
    out = capsys.readouterr().out
    assert "imported dataset dev-482" in out and SHORTCUT_ENDPOINT in out
    dataset = Dataset.objects.get(name="dev-482")
    assert dataset.case_count == 482 == DatasetCase.objects.filter(dataset=dataset).count()
    assert dataset.catalogue["products"]  # the generated world's catalogue travels with the cases
    heldout = DatasetCase.objects.filter(dataset=dataset, split="heldout").count()
    assert 0.12 * 482 < heldout < 0.28 * 482
    assert DatasetCase.objects.filter(dataset=dataset, category="product_qa").count() > 200
    again = evolution_demo_seed(actor=personas.admin, sets=("dev",))
    assert again.imported == [] and again.present == ["dev-482"]
    assert (tmp_path / "evolution-demo" / "seed-7" / "shortcut-dev.json").exists()
