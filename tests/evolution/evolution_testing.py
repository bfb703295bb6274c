"""Helpers shared by the evolution tests: a small dataset, the defect Harness, the shortcut
endpoint."""

from __future__ import annotations

import json

from django.test import Client

from studio.endpoints.models import ModelEndpoint
from studio.evolution.scripted import write_script
from studio.evolution.services.datasets import dataset_import
from studio.harnesses.services import harness_import


def client_for(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def small_world(*, sets_dir, files, actor, size: int = 24, tmp_path, delay_s: float = 0.0):
    """(version, dataset, endpoint): the first `size` dev cases, `files` as v1, the shortcut
    script."""
    lines = (sets_dir / "dev.jsonl").read_text(encoding="utf-8").splitlines()[:size]
    catalogue = json.loads((sets_dir / "catalogue.json").read_text(encoding="utf-8"))
    dataset = dataset_import(
        name=f"dev-{size}",
        text="\n".join(lines),
        source="dev.jsonl",
        actor=actor,
        catalogue=catalogue,
    )
    cases = [json.loads(line) for line in lines]
    script = write_script(cases=cases, path=tmp_path / "shortcut.json")
    if delay_s:
        data = json.loads(script.read_text())
        data = {k: [{"text": out, "delay_s": delay_s} for out in v] for k, v in data.items()}
        script.write_text(json.dumps(data))
    endpoint = ModelEndpoint.objects.create(
        name="shortcut", route=ModelEndpoint.SCRIPTED, script_path=str(script)
    )
    version = harness_import(files=files, author=actor, message="planted defect").version
    return version, dataset, endpoint
