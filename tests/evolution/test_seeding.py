"""seed_evolution_demo: the generated dev-set as a dataset and the scripted-shortcut endpoint,
idempotently."""

import pytest
from django.core.management import call_command

from studio.evolution.models import Dataset, DatasetCase
from studio.evolution.services.seeding import SHORTCUT_ENDPOINT, evolution_demo_seed

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


def test_the_demo_seeds_the_planted_defect_and_the_pages_offer_it(tmp_path, settings, capsys):
    """Issue 38, item 5: the shipped demo Harness gives the shortcut policy nothing to fail, so the
    demo seeds the planted-defect version and the evolution pages offer it with the steps, one click
    from the start form filled in."""
    from evolution_testing import client_for

    from studio.evolution.services.seeding import PLANTED_LABEL
    from studio.harnesses.models import Label
    from studio.harnesses.selectors import version_files

    settings.VAR_DIR = tmp_path
    call_command("seed_demo")
    call_command("seed_evolution_demo", "--sets", "dev")
    out = capsys.readouterr().out
    assert "Planted-defect scenario:" in out and "(label planted-defect" in out, out
    label = Label.objects.get(name=PLANTED_LABEL)
    planted = label.version
    assert planted.parent.labels.filter(
        name="production"
    ).exists()  # a child of the shipped version
    hooks = version_files(version=planted)["hooks.yaml"]
    assert "price-needs-tool" not in hooks and "numbers-grounded" not in hooks
    call_command("seed_evolution_demo", "--sets", "dev")  # idempotent
    assert Label.objects.filter(name=PLANTED_LABEL).get().version == planted
    assert planted.harness.versions.count() == 2

    from django.contrib.auth.models import User

    rafael = User.objects.get(username="rafael")
    listing = client_for(rafael).get("/evolution/").content.decode()
    assert 'id="planted-defect"' in listing and 'id="start-planted"' in listing
    url = listing.split('id="start-planted" href="')[1].split('"')[0].replace("&amp;", "&")
    form = client_for(rafael).get(url).content.decode()
    assert f'<option value="{planted.pk}" selected>' in form
    assert 'value="dev-482" selected' in form and 'name="limit" value="100"' in form
    assert 'id="start-planted"' not in form  # the form is already filled in for it
