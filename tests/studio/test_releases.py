"""Releases as the ML engineer drafts them and the reviewer decides them, through the test client.

The gates are fed by run rows whose folders hold what the real commands write (a replay record by
``serving.record``'s writer, an evaluation summary in ``training.self_eval``'s shape): see
``studio.releases.testing``. The checkpoint is the tiny test model copied into a run's final/.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from studio_testing import client_for

from studio.audit.models import AuditEvent
from studio.gates import version_release_gates
from studio.releases.models import Release
from studio.releases.testing import ifeval_run, mtp_run, replay_run, trained_checkpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def checkpoint(settings, tmp_path):
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    return trained_checkpoint(tmp_path / "runs" / "run-ckpt")


def _gates(release: Release) -> dict[str, dict]:
    return {g["name"]: g for g in release.gates}


def _form(checkpoint, version, **extra) -> dict:
    return {
        "checkpoint": str(checkpoint.final_dir),
        "harness_version": f"{version.harness.name}@v{version.number}",
        "draft_head": "",
        "notes": "",
        **extra,
    }


def test_a_release_fed_by_its_replay_and_ifeval_run_is_drafted_approved_and_downloaded(
    personas, demo_version, checkpoint, tmp_path
):
    final = checkpoint.final_dir
    replay = replay_run(
        tmp_path / "replay",
        checkpoint=final,
        harness_version=demo_version,
        walls={1: [1.0, 1.2, 1.4], 4: [3.0, 4.0, 9.5]},
    )
    evaluation = ifeval_run(tmp_path / "eval", model=final, prompt_strict=80.0)
    mei = client_for(personas.ml_engineer)

    form = mei.get("/releases/new/").content.decode()
    assert (
        str(final) in form and "livestream-avatar@v1" in form
    )  # the registry's checkpoint, the versions
    checked = mei.post("/releases/new/", {**_form(checkpoint, demo_version), "action": "check"})
    page = checked.content.decode()
    assert checked.status_code == 200 and 'id="gate-preview"' in page
    assert f"replay run #{replay.pk}" in page and f"evaluation run #{evaluation.pk}" in page
    assert not Release.objects.exists()  # checking saves nothing

    response = mei.post(
        "/releases/new/",
        {**_form(checkpoint, demo_version, notes="first tiny release"), "action": "draft"},
    )
    release = Release.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/releases/{release.pk}/"
    gates = _gates(release)
    assert gates["latency"]["status"] == "pass" and gates["latency"]["run_id"] == replay.pk
    assert gates["latency"]["detail"].startswith(
        "worst level C=4: wall P95 8.95 s (bound 15 s per request)"
    )
    assert gates["general capability"] == {
        **gates["general capability"],
        "status": "pass",
        "run_id": evaluation.pk,
    }
    assert "IFE-P strict 80.0%" in gates["general capability"]["detail"]
    # v1 has no parent and nothing is in production yet: there is nothing it could regress against
    assert (
        gates["business regression"]["status"] == "pass"
        and "no version is in production yet" in gates["business regression"]["detail"]
    )

    operator = client_for(personas.operator)
    page = operator.get(f"/releases/{release.pk}/").content.decode()
    assert (
        f'href="/training/runs/{replay.pk}/"' in page and 'id="decide"' not in page
    )  # operators read
    assert (
        operator.post(
            f"/releases/{release.pk}/decide/", {"decision": "approve", "reason": "go"}
        ).status_code
        == 403
    )
    assert (
        mei.post(
            f"/releases/{release.pk}/decide/", {"decision": "approve", "reason": "go"}
        ).status_code
        == 403
    )

    rafael = client_for(personas.reviewer)
    assert 'id="decide"' in rafael.get(f"/releases/{release.pk}/").content.decode()
    refused = rafael.post(
        f"/releases/{release.pk}/decide/", {"decision": "approve", "reason": "latency is fine"}
    )
    assert refused.status_code == 400
    assert (
        "compatibility: no data" in refused.content.decode()
        and "override reason" in refused.content.decode()
    )
    assert "Approving a release needs every gate to pass" in refused.content.decode()
    assert Release.objects.get().status == Release.DRAFT
    ok = rafael.post(
        f"/releases/{release.pk}/decide/",
        {
            "decision": "approve",
            "reason": "latency is fine",
            "override_reason": "v1 is the demo Harness, unchanged",
        },
    )
    assert ok.status_code == 302
    release.refresh_from_db()
    assert release.status == Release.APPROVED and release.decided_by == personas.reviewer
    assert release.override_reason == "v1 is the demo Harness, unchanged"
    assert list(
        AuditEvent.objects.filter(target=f"release #{release.pk}")
        .order_by("pk")
        .values_list("action", flat=True)
    ) == ["release.draft", "release.approve"]

    download = operator.get(f"/releases/{release.pk}/manifest.json")
    assert download["Content-Disposition"] == f'attachment; filename="release-{release.pk}.json"'
    manifest = json.loads(download.content)
    from harness.checkpoints import folder_files

    files = [f.to_dict() for f in folder_files(final)]
    assert manifest["checkpoint"] == {
        "path": str(final.resolve()),
        "fingerprint": release.checkpoint_fingerprint,
        "files": files,
        "run_id": checkpoint.pk,
    }
    assert {f["name"] for f in files} >= {
        "config.json",
        "model.safetensors",
        "tokenizer_config.json",
    }
    assert manifest["signature"]["algorithm"] == "ed25519"  # decided: signed
    assert manifest["harness"] == {
        "name": "livestream-avatar",
        "number": 1,
        "digest": demo_version.digest,
    }
    assert (
        manifest["release"]["status"] == "approved"
        and manifest["release"]["decided_by"] == "rafael"
    )
    assert {g["name"]: g["run_id"] for g in manifest["gates"]} == {
        "business regression": None,
        "latency": replay.pk,
        "general capability": evaluation.pk,
        "compatibility": None,
        "judge calibration": None,
    }
    again = rafael.post(
        f"/releases/{release.pk}/decide/", {"decision": "reject", "reason": "changed my mind"}
    )
    assert again.status_code == 400 and "was already approved by rafael" in again.content.decode()


def test_the_worst_level_counts_and_only_runs_of_this_checkpoint_and_version_feed_the_gates(
    personas, demo_version, demo_files, checkpoint, tmp_path
):
    from studio_testing import edit_skill_rule

    from studio.harnesses.services import harness_version_create

    final = checkpoint.final_dir
    other = trained_checkpoint(tmp_path / "runs" / "run-other")
    v2 = harness_version_create(
        harness=demo_version.harness,
        files=edit_skill_rule(demo_files),
        author=personas.operator,
        message="v2",
        parent=demo_version,
    )
    slow = replay_run(
        tmp_path / "slow",
        checkpoint=final,
        harness_version=demo_version,
        walls={1: [2.0, 2.5, 3.0], 8: [12.0, 16.0, 21.0]},
    )
    replay_run(
        tmp_path / "fast-other-model",
        checkpoint=other.final_dir,
        harness_version=demo_version,
        walls={1: [0.5, 0.6]},
    )
    replay_run(
        tmp_path / "fast-other-version", checkpoint=final, harness_version=v2, walls={1: [0.5, 0.6]}
    )
    ifeval_run(tmp_path / "eval-other", model=other.final_dir, prompt_strict=90.0)
    weak = ifeval_run(
        tmp_path / "eval-weak", model=final, prompt_strict=20.0, base_strict=80.0, n=10
    )
    client_for(personas.ml_engineer).post(
        "/releases/new/", {**_form(checkpoint, demo_version), "action": "draft"}
    )
    gates = _gates(Release.objects.get())
    assert gates["latency"]["status"] == "fail" and gates["latency"]["run_id"] == slow.pk
    assert gates["latency"]["detail"].startswith("worst level C=8: wall P95 20.")
    assert (
        gates["general capability"]["status"] == "fail"
        and gates["general capability"]["run_id"] == weak.pk
    )
    assert (
        "IFE-P strict 20.0% on 10 prompts (generated "
        "instruction-following set (IFEval checkers), seed 0) vs its "
        "base 80.0% on the same prompts: -60.0 points" in gates["general capability"]["detail"]
    )
    assert (
        "fewer instructions followed than its base, beyond chance"
        in gates["general capability"]["detail"]
    )


def test_a_replay_started_with_the_demo_folder_counts_for_the_version_of_the_same_digest(
    personas, demo_version, checkpoint, tmp_path
):
    replay = replay_run(
        tmp_path / "replay",
        checkpoint=checkpoint.final_dir,
        harness_digest=demo_version.digest,
        walls={1: [1.0, 2.0]},
    )
    client_for(personas.ml_engineer).post(
        "/releases/new/", {**_form(checkpoint, demo_version), "action": "draft"}
    )
    assert _gates(Release.objects.get())["latency"]["run_id"] == replay.pk


def test_every_wrong_field_is_named_with_a_400_and_nothing_is_saved(
    personas, demo_version, checkpoint, tmp_path
):
    mei = client_for(personas.ml_engineer)
    empty = mei.post("/releases/new/", {"action": "draft"})
    page = empty.content.decode()
    assert empty.status_code == 400
    assert 'data-field="checkpoint"' in page and 'data-field="harness_version"' in page
    outside = tmp_path / "elsewhere"
    shutil.copytree(checkpoint.final_dir, outside)
    wrong = mei.post(
        "/releases/new/",
        {
            "checkpoint": str(outside),
            "harness_version": "livestream-avatar@v9",
            "draft_head": "relative/head",
            "notes": "x" * 2001,
            "action": "draft",
        },
    )
    page = wrong.content.decode()
    assert wrong.status_code == 400
    assert (
        "checkpoint: choose a checkpoint of the registry" in page and "livestream-avatar@v9" in page
    )
    assert (
        "draft_head: give the absolute path of a draft-head folder" in page
        and "notes: at most 2000" in page
    )
    assert (
        not Release.objects.exists()
        and not AuditEvent.objects.filter(action__startswith="release.").exists()
    )


def test_a_checkpoint_the_web_process_cannot_read_is_named_with_a_400(
    personas, demo_version, checkpoint
):
    os.mkfifo(checkpoint.final_dir / "broken.safetensors")  # never opened: reading it would block
    response = client_for(personas.ml_engineer).post(
        "/releases/new/", {**_form(checkpoint, demo_version), "action": "draft"}
    )
    page = response.content.decode()
    assert response.status_code == 400
    assert 'data-field="checkpoint"' in page and "cannot be read on this host" in page
    assert not Release.objects.exists()


def test_a_stale_draft_head_is_refused_with_how_to_readapt_it_and_a_fitting_one_is_recorded(
    personas, demo_version, checkpoint, tmp_path
):
    from harness.checkpoints import checkpoint_info

    final = checkpoint.final_dir
    mei = client_for(personas.ml_engineer)
    stale = mtp_run(
        tmp_path / "runs" / "run-stale",
        checkpoint=final,
        card={"stage": "mtp", "policy": "/models/older-policy", "policy_fingerprint": "f" * 64},
    ).final_dir
    head = mtp_run(tmp_path / "runs" / "run-mtp", checkpoint=final).final_dir
    form = mei.get(
        "/releases/new/"
    ).content.decode()  # the studio's MTP heads are offered, with their policy
    assert f'<option value="{head}">' in form and "adapted to /models/older-policy" in form
    refused = mei.post(
        "/releases/new/",
        {**_form(checkpoint, demo_version, draft_head=str(stale)), "action": "check"},
    )
    page = refused.content.decode()
    assert refused.status_code == 400 and 'data-field="draft_head"' in page
    assert (
        "it is stale for this policy" in page
        and f"python -m training mtp --model {final} --init-head {stale}" in page
    )
    assert not Release.objects.exists()

    response = mei.post(
        "/releases/new/",
        {**_form(checkpoint, demo_version, draft_head=str(head)), "action": "draft"},
    )
    assert response.status_code == 302
    release = Release.objects.get()
    assert release.draft_head_path == str(head.resolve())
    assert release.draft_head_fingerprint == checkpoint_info(head)["fingerprint"]
    assert release.draft_head_card["policy_fingerprint"] == checkpoint_info(final)["fingerprint"]
    manifest = json.loads(mei.get(f"/releases/{release.pk}/manifest.json").content)
    assert (
        manifest["draft_head"]["path"] == str(head.resolve())
        and manifest["draft_head"]["token_map"] is None
    )


def test_gates_refresh_when_a_run_finished_since_and_approval_checks_the_checkpoint_on_disk(
    personas, demo_version, checkpoint, tmp_path
):
    mei = client_for(personas.ml_engineer)
    mei.post("/releases/new/", {**_form(checkpoint, demo_version), "action": "draft"})
    release = Release.objects.get()
    assert _gates(release)["latency"]["status"] == "no data"
    assert "no finished replay run served" in _gates(release)["latency"]["detail"]
    replay = replay_run(
        tmp_path / "replay",
        checkpoint=checkpoint.final_dir,
        harness_version=demo_version,
        walls={1: [1.0]},
    )
    assert client_for(personas.reviewer).post(f"/releases/{release.pk}/gates/").status_code == 403
    assert mei.post(f"/releases/{release.pk}/gates/").status_code == 302
    release.refresh_from_db()
    assert _gates(release)["latency"]["run_id"] == replay.pk
    assert (
        AuditEvent.objects.filter(action="release.gates.refresh").get().data["after"]["latency"]
        == "pass"
    )

    (checkpoint.final_dir / "generation_config.json").write_text(
        '{"temperature": 0.1}'
    )  # retrained in place
    refused = client_for(personas.reviewer).post(
        f"/releases/{release.pk}/decide/",
        {"decision": "approve", "reason": "r", "override_reason": "business gate checked by hand"},
    )
    assert refused.status_code == 400 and "checkpoint: " in refused.content.decode()
    assert "is no longer the folder that was drafted" in refused.content.decode()
    rejected = client_for(personas.reviewer).post(
        f"/releases/{release.pk}/decide/",
        {"decision": "reject", "reason": "the checkpoint changed"},
    )
    assert rejected.status_code == 302 and Release.objects.get().status == Release.REJECTED
    assert (
        mei.post(f"/releases/{release.pk}/gates/", follow=True)
        .content.decode()
        .count("already rejected")
        == 1
    )


def test_a_decision_needs_a_known_decision_and_a_reason(personas, demo_version, checkpoint):
    client_for(personas.ml_engineer).post(
        "/releases/new/", {**_form(checkpoint, demo_version), "action": "draft"}
    )
    release = Release.objects.get()
    response = client_for(personas.admin).post(
        f"/releases/{release.pk}/decide/", {"decision": "ship"}
    )
    page = response.content.decode()
    assert (
        response.status_code == 400
        and "decision: one of approve, reject" in page
        and "reason: say why" in page
    )
    assert Release.objects.get().status == Release.DRAFT


def test_a_harness_promotion_reads_the_checkpoint_of_the_newest_approved_release(
    personas, demo_version, checkpoint, tmp_path
):
    other = trained_checkpoint(tmp_path / "runs" / "run-other")
    theirs = replay_run(
        tmp_path / "replay-other",
        checkpoint=other.final_dir,
        harness_version=demo_version,
        walls={1: [30.0]},
    )
    gates = {g.name: g for g in version_release_gates(version=demo_version)}
    assert (
        gates["latency"].run_id == theirs.pk
        and "no release of livestream-avatar is approved yet" in gates["latency"].detail
    )
    mine = replay_run(
        tmp_path / "replay",
        checkpoint=checkpoint.final_dir,
        harness_version=demo_version,
        walls={1: [2.0]},
    )
    ifeval_run(tmp_path / "eval-other", model=other.final_dir, prompt_strict=70.0)
    client_for(personas.ml_engineer).post(
        "/releases/new/", {**_form(checkpoint, demo_version), "action": "draft"}
    )
    release = Release.objects.get()
    client_for(personas.reviewer).post(
        f"/releases/{release.pk}/decide/",
        {"decision": "approve", "reason": "r", "override_reason": "first release"},
    )
    replay_run(
        tmp_path / "replay-other-2",
        checkpoint=other.final_dir,
        harness_version=demo_version,
        walls={1: [40.0]},
    )  # newer, but not the released checkpoint
    gates = {g.name: g for g in version_release_gates(version=demo_version)}
    assert gates["latency"].status == "pass" and gates["latency"].run_id == mine.pk
    assert (
        f"the checkpoint of release #{release.pk}, the newest approved" in gates["latency"].detail
    )
    assert (
        gates["general capability"].status == "no data"
    )  # the released checkpoint has no IFEval run


@pytest.mark.django_db(transaction=True)
def test_deciding_and_refreshing_lock_the_release_in_their_own_transaction(
    personas, demo_version, checkpoint
):
    """As a web request runs them (autocommit, no test transaction around them): the row lock
    (select_for_update) must sit inside the service's own transaction, or PostgreSQL refuses it."""
    mei = client_for(personas.ml_engineer)
    mei.post("/releases/new/", {**_form(checkpoint, demo_version), "action": "draft"})
    release = Release.objects.get()
    assert mei.post(f"/releases/{release.pk}/gates/").status_code == 302
    approved = client_for(personas.reviewer).post(
        f"/releases/{release.pk}/decide/",
        {"decision": "approve", "reason": "r", "override_reason": "no evolution stage for v1 yet"},
    )
    assert approved.status_code == 302 and Release.objects.get().status == Release.APPROVED


def _paired(base: list[bool], mine: list[bool]) -> dict:
    from evaluation.gates import capability_comparison, read_ifeval

    return capability_comparison(
        read_ifeval(
            {
                "n": len(mine),
                "prompt_strict": 0.0,
                "per_prompt": mine,
                "base": {"per_prompt": base, "prompt_strict": 0.0},
            },
            source="test",
        )
    )


def test_the_capability_gate_never_passes_a_large_drop_and_says_when_the_prompts_are_too_few():
    """On every small sample (2 to 30 prompts) where the checkpoint follows fewer instructions than
    its base by 5 points or more, the gate does not pass; where the sample cannot tell, it says
    so."""
    from evaluation.gates import CAPABILITY_TOLERANCE_POINTS, capability_verdict

    for n in range(2, 31):
        for base_passes in range(1, n + 1):
            for lost in range(1, base_passes + 1):
                if 100 * lost / n < CAPABILITY_TOLERANCE_POINTS:
                    continue
                base = [True] * base_passes + [False] * (n - base_passes)
                mine = [True] * (base_passes - lost) + [False] * (n - base_passes + lost)
                status, why = capability_verdict(_paired(base, mine))
                assert status in ("fail", "not enough data"), (n, base_passes, lost, status)
                if status == "not enough data":
                    assert f"on {n} prompts the interval still allows a loss of" in why
    assert (
        capability_verdict(_paired([True] * 10, [True] * 10))[0] == "pass"
    )  # the same answers: no loss
    many = [
        True,
        False,
    ] * 200  # 400 prompts, half followed by the base; the checkpoint loses 2 of them
    assert capability_verdict(_paired(many, [False, False] + many[2:]))[0] == "pass"
    assert (
        capability_verdict(_paired(many, [False] * 40 + many[40:]))[0] == "fail"
    )  # 20 lost: 5 points


def test_ifep_zero_against_a_base_of_ten_percent_on_ten_prompts_is_not_enough_data_and_blocks(
    personas, demo_version, checkpoint, tmp_path
):
    """Issue 38: the gate passed at IFE-P 0.0% against its base's 10% (one prompt of ten)."""
    ifeval_run(
        tmp_path / "eval", model=checkpoint.final_dir, prompt_strict=0.0, base_strict=10.0, n=10
    )
    client_for(personas.ml_engineer).post(
        "/releases/new/", {**_form(checkpoint, demo_version), "action": "draft"}
    )
    gate = _gates(Release.objects.get())["general capability"]
    assert gate["status"] == "not enough data"
    assert (
        "IFE-P strict 0.0% on 10 prompts" in gate["detail"]
        and "vs its base 10.0%" in gate["detail"]
    )
    assert "not enough data: on 10 prompts the interval still allows a loss of" in gate["detail"]
    page = (
        client_for(personas.reviewer).get(f"/releases/{Release.objects.get().pk}/").content.decode()
    )
    assert 'data-gate="general capability" data-status="not enough data"' in page
