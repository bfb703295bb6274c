"""The evolution demo data: the generated case sets as datasets, and the shortcut-script endpoint.

``evolution_demo_seed`` generates the SPEC §6 sets with the evaluation world
(same seed, byte-identical files), imports each set with its catalogue, writes
the shortcut policy script for the dev-set (``studio.evolution.scripted``) and
registers it as the endpoint ``scripted-shortcut``. Idempotent: sets already
imported are left as they are.

On the shipped demo Harness the shortcut policy fails almost nothing (its hooks
stop the wrong prices), so a diagnosis there has nothing to propose. The
planted-defect scenario gives the loop something to find: a version of the demo
Harness without its price grounding (``evaluation.diagnosis.planted``), labelled
``planted-defect``, which the evolution pages offer with the dev-set and the
shortcut endpoint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User

from studio.endpoints.models import ModelEndpoint
from studio.evolution.datasets import dataset_import
from studio.evolution.models import Dataset
from studio.evolution.scripted import write_script
from studio.harnesses.models import Harness, HarnessVersion, Label

DEMO_SEED = 7
DEMO_SETS = {
    "dev": ("dev-482", "C_judge: the 482-case human-labelled dev-set of the evolution loop"),
    "live_qa": ("live-qa-978", "T1 Live-Stream QA"),
    "tool_robustness": ("tool-robustness-1532", "T3 Tool Robustness (distractor tools)"),
    "prompt_robustness": ("prompt-robustness-491", "T3 Prompt Robustness (instruction constraints)"),
    "replay": ("replay-110", "D_perf deployment replay (10 warm-up + 100 measured)"),
}
SHORTCUT_ENDPOINT = "scripted-shortcut"
PLANTED_LABEL = "planted-defect"
PLANTED_MESSAGE = ("Planted defect for the evolution demo: the price grounding removed (item_qa's "
                   "fetch-before-facts rule, the price-needs-tool and numbers-grounded hooks)")


@dataclass
class SeedReport:
    folder: Path
    imported: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    endpoint: ModelEndpoint | None = None
    planted: HarnessVersion | None = None


def demo_folder(seed: int = DEMO_SEED) -> Path:
    """Where ``seed_evolution_demo`` writes the generated sets of ``seed``."""
    return Path(settings.VAR_DIR) / "evolution-demo" / f"seed-{seed}"


def demo_set_file(key: str, *, seed: int = DEMO_SEED) -> Path | None:
    """The generated file of one demo set (a key of DEMO_SETS), or None before the demo was seeded."""
    from evaluation.world.sets import SET_FILES

    path = demo_folder(seed) / SET_FILES[key]
    return path if path.is_file() else None


def evolution_demo_seed(*, actor: User | None, seed: int = DEMO_SEED, sets: tuple[str, ...] = tuple(DEMO_SETS),
                        folder: Path | None = None) -> SeedReport:
    from evaluation.world.sets import SET_FILES, generate

    folder = Path(folder or demo_folder(seed))
    report = SeedReport(folder=folder)
    if not (folder / "manifest.json").exists():
        generate(out=folder, seed=seed)
    catalogue = json.loads((folder / "catalogue.json").read_text(encoding="utf-8"))
    for key in sets:
        name, description = DEMO_SETS[key]
        if Dataset.objects.filter(name=name).exists():
            report.present.append(name)
            continue
        path = folder / SET_FILES[key]
        dataset_import(name=name, text=path.read_text(encoding="utf-8"), source=str(path), actor=actor,
                       catalogue=catalogue, description=description)
        report.imported.append(name)
    if "dev" in sets:
        from evaluation.cases import load_cases

        script = write_script(cases=load_cases(folder / SET_FILES["dev"]), path=folder / "shortcut-dev.json")
        report.endpoint, _ = ModelEndpoint.objects.update_or_create(
            name=SHORTCUT_ENDPOINT,
            defaults={"route": ModelEndpoint.SCRIPTED, "script_path": str(script), "created_by": actor, "description": (
                "Scripted test double for the dev-set: states a wrong price from memory unless a hook "
                "demands a tool first (studio/evolution/scripted.py)")})
    if actor is not None:
        report.planted = planted_defect_seed(actor=actor)
    return report


def planted_defect_seed(*, actor: User) -> HarnessVersion | None:
    """The demo Harness without its price grounding, as a child of the shipped version, labelled
    ``planted-defect`` (made once); None when the demo Harness is not in the studio (``seed_demo``)."""
    from evaluation.diagnosis.planted import without_price_grounding
    from harness import demo_harness_dir, load_dir
    from studio.harnesses.services import DuplicateVersion, harness_version_create, label_move

    shipped = load_dir(demo_harness_dir())
    harness = Harness.objects.filter(name=shipped.name).first()
    if harness is None:
        return None
    label = Label.objects.filter(harness=harness, name=PLANTED_LABEL).select_related("version").first()
    if label is not None:
        return label.version
    versions = HarnessVersion.objects.filter(harness=harness)
    parent = versions.filter(digest=shipped.digest).first() or versions.order_by("number").first()
    try:
        version = harness_version_create(harness=harness, files=without_price_grounding(shipped.files),
                                         author=actor, message=PLANTED_MESSAGE, parent=parent)
    except DuplicateVersion as error:
        version = error.version
    label_move(harness=harness, name=PLANTED_LABEL, version=version, actor=actor,
               reason="the evolution demo's planted-defect scenario (docs/evolution.md)")
    return version
