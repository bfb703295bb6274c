"""Worlds the browser tests build their pages on."""

from __future__ import annotations


def planted_defect_world(*, people, tmp_path, size: int) -> dict:
    """The planted-defect Harness as v1, ``size`` dev cases of seed 7 as dataset ``dev-<size>``, the
    shortcut endpoint (answers every case) and a chatter endpoint (every case ends in the Harness's
    fallback)."""
    import json

    from evaluation.diagnosis.planted import without_price_grounding
    from harness import demo_harness_dir, read_dir
    from studio.endpoints.models import ModelEndpoint
    from studio.evolution.scripted import write_script
    from studio.evolution.services.datasets import dataset_import
    from studio.harnesses.services import harness_import
    from studio.traffic.testing import world_cases

    cases, catalogue = world_cases(size, seed=7)
    dataset = dataset_import(
        name=f"dev-{size}",
        text="\n".join(json.dumps(c) for c in cases),
        source="dev.jsonl",
        actor=people["operator"],
        catalogue=catalogue.to_dict(),
    )
    files, _ = read_dir(demo_harness_dir())
    version = harness_import(
        files=without_price_grounding(files), author=people["operator"], message="prices unguarded"
    ).version
    shortcut = ModelEndpoint.objects.create(
        name="shortcut",
        route=ModelEndpoint.SCRIPTED,
        script_path=str(write_script(cases=cases, path=tmp_path / "s.json")),
    )
    chatter_script = tmp_path / "chatter.json"
    chatter_script.write_text(
        json.dumps({c["id"]: ["Hello there, lovely to see you all!"] * 8 for c in cases})
    )
    chatter = ModelEndpoint.objects.create(
        name="chatter", route=ModelEndpoint.SCRIPTED, script_path=str(chatter_script)
    )
    return {
        "version": version,
        "dataset": dataset,
        "shortcut": shortcut,
        "chatter": chatter,
        "case_ids": [c["id"] for c in cases],
    }
