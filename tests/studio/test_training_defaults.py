"""Every training form and every preset starts as it comes: the page's own values, submitted
unchanged.

The form is read from its HTML the way a browser submits it (every input's value, the checked boxes,
each select's selected option, textareas with the CRLF line breaks browsers send), posted as the ML
engineer, and must start a run (a redirect to its page) on a fresh demo: the demo's replay cases
are where ``seed_evolution_demo`` writes them, and nothing outside the repository is needed.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from studio_testing import client_for

from studio.training.configs import CONFIG_CLASSES
from studio.training.models import TrainingRun
from studio.training.presets import PRESETS

pytestmark = pytest.mark.django_db


class _Form(HTMLParser):
    """The name/value pairs a browser would post from the page's #run-form."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.pairs: list[tuple[str, str]] = []
        self.inside = False
        self.textarea: str | None = None
        self.select: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form" and a.get("id") == "run-form":
            self.inside = True
        if not self.inside:
            return
        if tag == "input" and a.get("name"):
            if a.get("type") == "checkbox" and "checked" not in a:
                return
            self.pairs.append((a["name"], a.get("value") or ""))
        elif tag == "textarea":
            self.textarea = a["name"]
            self.pairs.append((a["name"], ""))
        elif tag == "select":
            self.select = a["name"]
        elif tag == "option" and self.select and "selected" in a:
            self.pairs.append((self.select, a.get("value") or ""))

    def handle_data(self, data):
        if self.textarea is not None:
            name, text = self.pairs[-1]
            self.pairs[-1] = (name, text + data)

    def handle_endtag(self, tag):
        if tag == "textarea" and self.textarea is not None:
            name, text = self.pairs[-1]
            # a textarea's first newline is not part of its value; browsers send CRLF line breaks
            self.pairs[-1] = (
                name,
                text.removeprefix("\n").replace("\r\n", "\n").replace("\n", "\r\n"),
            )
            self.textarea = None
        elif tag == "select":
            self.select = None
        elif tag == "form":
            self.inside = False


def _submitted(html: str) -> dict[str, list[str]]:
    form = _Form()
    form.feed(html)
    data: dict[str, list[str]] = {}
    for name, value in form.pairs:
        if name != "csrfmiddlewaretoken":
            data.setdefault(name, []).append(value)
    return data


@pytest.fixture
def fresh_demo(settings, tmp_path, runs_dir):
    """What a fresh demo has on disk for the forms: the replay cases seed_evolution_demo writes."""
    from evaluation.world.sets import SET_FILES
    from studio.evolution.services.seeding import demo_folder

    settings.VAR_DIR = tmp_path / "var"
    cases = demo_folder() / SET_FILES["replay"]
    cases.parent.mkdir(parents=True)
    cases.write_text('{"id": "r1"}\n')
    return runs_dir


FORMS = [pytest.param(kind, "", id=f"{kind}-defaults") for kind in CONFIG_CLASSES] + [
    pytest.param(p.kind, p.name, id=f"{p.kind}-{p.name}") for p in PRESETS.values()
]


@pytest.mark.parametrize(("kind", "preset"), FORMS)
def test_every_form_and_preset_starts_unchanged(personas, fresh_demo, kind, preset):
    mei = client_for(personas.ml_engineer)
    url = f"/training/new/{kind}/" + (f"?preset={preset}" if preset else "")
    page = mei.get(url)
    assert page.status_code == 200
    response = mei.post(url, _submitted(page.content.decode()))
    errors = response.content.decode() if response.status_code != 302 else ""
    assert response.status_code == 302, errors[errors.find('id="form-errors"') :][:2000]
    run = TrainingRun.objects.get()
    assert response["Location"] == f"/training/runs/{run.pk}/" and run.kind == kind


def test_a_wrong_mapping_names_its_line_and_the_accepted_spelling(personas, fresh_demo):
    page = client_for(personas.ml_engineer).post(
        "/training/new/rl/", {"reward_weights": "accuracy: 1.0\r\n  - x: [", "max_steps": "0"}
    )
    assert page.status_code == 400
    text = page.content.decode()
    assert "reward_weights: line 2: invalid YAML" in text
    assert (
        "(write one &#x27;name: value&#x27; a line, e.g. &#x27;accuracy: 1.0&#x27;, or {} for none)"
        in text
    )
    assert "max_steps: " in text  # every wrong field at once
    assert not TrainingRun.objects.exists()
