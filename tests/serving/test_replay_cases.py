"""The evaluation world's replay set as a replay manifest: 10 warm-up + 100 measured, one
catalogue."""

import json

import pytest

from serving.replay_cases import CaseFileError, load_manifest
from tests import artefacts


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return artefacts.world(tmp_path_factory, 11)


def test_the_110_case_replay_set_splits_as_the_report_did(world):
    manifest = load_manifest(world / "replay.jsonl", warmup=10, measured=100)
    assert len(manifest.warmup) == 10 and len(manifest.measured) == 100
    assert all(c["replay"]["warmup"] for c in manifest.warmup)
    assert not any(c["replay"]["warmup"] for c in manifest.measured)
    assert manifest.catalogue_path == str((world / "catalogue.json").resolve())
    request = manifest.measured[0]["request"]
    assert request["comments"] and request["intent"] == manifest.measured[0]["category"]
    assert "gold" not in request  # labels stay out of what the agent sees
    again = load_manifest(world / "replay.jsonl", warmup=10, measured=100)
    assert again.digest == manifest.digest and len(manifest.digest) == 64
    assert load_manifest(world / "replay.jsonl", warmup=1, measured=4).digest != manifest.digest


def test_an_invalid_evaluation_case_is_named_by_line_and_field(world, tmp_path):
    lines = (world / "replay.jsonl").read_text().splitlines()[:3]
    bad = json.loads(lines[1])
    bad["category"] = "weather"
    path = tmp_path / "replay.jsonl"
    path.write_text("\n".join([lines[0], json.dumps(bad), lines[2]]) + "\n")
    with pytest.raises(
        CaseFileError, match=r"replay.jsonl:2: not a valid hs-case/1 case: category"
    ):
        load_manifest(path, warmup=0, measured=3)


def test_cases_naming_different_catalogues_are_refused(world, tmp_path):
    lines = [json.loads(line) for line in (world / "replay.jsonl").read_text().splitlines()[:2]]
    lines[1]["catalogue"] = "other.json"
    path = world / "mixed.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in lines))
    with pytest.raises(CaseFileError, match="different catalogues"):
        load_manifest(path, warmup=0, measured=2)
