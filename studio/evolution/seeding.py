"""The evolution demo data: the generated case sets as datasets, and the shortcut-script endpoint.

``evolution_demo_seed`` generates the SPEC §6 sets with the evaluation world
(same seed, byte-identical files), imports each set with its catalogue, writes
the shortcut policy script for the dev-set (``studio.evolution.scripted``) and
registers it as the endpoint ``scripted-shortcut``. Idempotent: sets already
imported are left as they are.
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

DEMO_SEED = 7
DEMO_SETS = {
    "dev": ("dev-482", "C_judge: the 482-case human-labelled dev-set of the evolution loop"),
    "live_qa": ("live-qa-978", "T1 Live-Stream QA"),
    "tool_robustness": ("tool-robustness-1532", "T3 Tool Robustness (distractor tools)"),
    "prompt_robustness": ("prompt-robustness-491", "T3 Prompt Robustness (instruction constraints)"),
    "replay": ("replay-110", "D_perf deployment replay (10 warm-up + 100 measured)"),
}
SHORTCUT_ENDPOINT = "scripted-shortcut"


@dataclass
class SeedReport:
    folder: Path
    imported: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    endpoint: ModelEndpoint | None = None


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
    return report
