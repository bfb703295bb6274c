"""One evaluation core: the CLI runner, the studio's runs and training's self-evaluation give the
same rows, and the studio judges with the version's own settings."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.summary import score_row
from harness import demo_harness_dir, read_dir
from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import CaseResult, EvalRun, Stage
from studio.evolution.rows import result_row
from studio.evolution.scripted import write_script
from studio.evolution.services.datasets import dataset_import
from studio.evolution.services.runs import eval_run_start
from studio.evolution.services.stages import candidate_build, evolution_start
from studio.harnesses.services import draft_create, draft_file_save, harness_import
from studio.jobs.services import job_run

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def _lines(path: Path, n: int, keep=lambda case: True) -> list[str]:
    return [
        line for line in path.read_text(encoding="utf-8").splitlines() if keep(json.loads(line))
    ][:n]


def _mixed_cases(sets_dir: Path) -> list[str]:
    """Dev cases, Tool Robustness cases with an unseen tool (canned results) and Prompt Robustness
    cases (an instruction block): the three ways a case changes the Harness it runs under."""
    return (
        _lines(sets_dir / "dev.jsonl", 6)
        + _lines(
            sets_dir / "tool_robustness.jsonl", 3, lambda c: "unseen_tool" in c.get("tags", [])
        )
        + _lines(sets_dir / "prompt_robustness.jsonl", 3)
    )


def _comparable(row: dict) -> tuple:
    flat = score_row(row)
    return (
        row["reply"],
        row["route"],
        flat["outcome"],
        flat["accuracy"],
        flat["effectiveness"],
        flat["avg"],
        flat["rubric_avg"],
        tuple(flat["reasons"]),
    )


def test_one_case_set_gives_identical_rows_through_every_adapter(
    personas, demo_sets_dir, defect_files, tmp_path
):
    from evaluation.scoring import CaseScorer
    from harness import load_mapping
    from harness.livestream import Catalogue
    from harness.policies.scripted import ScriptedPolicy
    from training.self_eval import score_cases

    lines = _mixed_cases(demo_sets_dir)
    cases = [json.loads(line) for line in lines]
    script = write_script(cases=cases, path=tmp_path / "shortcut.json")
    catalogue_text = (demo_sets_dir / "catalogue.json").read_text(encoding="utf-8")

    # the command line: python -m evaluation run
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "catalogue.json").write_text(catalogue_text, encoding="utf-8")
    harness_dir = tmp_path / "harness"
    for path, text in defect_files.items():
        (harness_dir / path).parent.mkdir(parents=True, exist_ok=True)
        (harness_dir / path).write_text(text, encoding="utf-8")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluation",
            "run",
            "--harness",
            str(harness_dir),
            "--set",
            str(folder / "cases.jsonl"),
            "--policy",
            f"scripted:{script}",
            "--out",
            str(tmp_path / "run"),
            "--no-progress",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=500,
    )
    assert proc.returncode == 0, proc.stderr
    cli = {
        r["id"]: r
        for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())
    }

    # the studio: an evaluation run as a job
    dataset = dataset_import(
        name="mixed",
        text="\n".join(lines),
        source="mixed.jsonl",
        actor=personas.admin,
        catalogue=json.loads(catalogue_text),
    )
    endpoint = ModelEndpoint.objects.create(
        name="shortcut", route=ModelEndpoint.SCRIPTED, script_path=str(script)
    )
    version = harness_import(files=defect_files, author=personas.admin, message="defect").version
    run = eval_run_start(
        version=version,
        dataset=dataset,
        endpoint=endpoint,
        case_ids=[c["id"] for c in cases],
        actor=personas.operator,
    )
    job_run(job_id=run.job_id, heartbeat=False)
    run.refresh_from_db()
    assert run.status == EvalRun.SUCCEEDED
    studio = {r.case_id: result_row(r) for r in run.results.all()}

    # training's self-evaluation: its JSON Lines adapter
    scorer = CaseScorer.for_bundle(
        bundle=load_mapping(defect_files),
        policy=ScriptedPolicy.load(script),
        catalogue=Catalogue.load(folder / "catalogue.json"),
    )
    try:
        rows = score_cases(
            items=[(c, "original") for c in cases],
            out=tmp_path / "self_eval.jsonl",
            scorer_for={"original": scorer}.__getitem__,
        )
    finally:
        scorer.close()
    training = {r["id"]: r for r in rows}

    ids = [c["id"] for c in cases]
    expected = {i: _comparable(cli[i]) for i in ids}
    assert {i: _comparable(studio[i]) for i in ids} == expected
    assert {i: _comparable(training[i]) for i in ids} == expected
    # the case variants were applied: the unseen tools answered from the cases, the instructions
    # were judged
    assert all(cli[c["id"]]["verdict"]["rubrics"] for c in cases[6:])
    unseen = {t["name"] for c in cases[6:9] for t in c["extra_tools"]}
    assert any(
        call["name"] in unseen and call["error"] is None
        for i in ids[6:9]
        for call in studio[i]["trajectory"]["tool_calls"]
    )
    # a wrong price got through the defect Harness somewhere, so the rows are not all alike
    assert len({v[3] for v in expected.values()}) == 2
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert (
        run.summary["outcomes"] == report["outcomes"]
        and run.summary["overall"] == report["overall"]
    )


def _with_length_hook_at(files: dict[str, str], chars: int) -> dict[str, str]:
    """The runtime's reply-length hook pinned to ``chars``: only the judge reads max_reply_chars."""
    hook = "  - id: reply-length\n    event: stop\n    type: max_length\n"
    assert hook in files["hooks.yaml"]
    return {
        **files,
        "hooks.yaml": files["hooks.yaml"].replace(
            hook, hook + f"    params: {{max_chars: {chars}}}\n"
        ),
    }


def test_an_evolution_edit_of_max_reply_chars_changes_the_studio_verdicts(
    personas, demo_sets_dir, tmp_path, django_capture_on_commit_callbacks
):
    files = _with_length_hook_at(read_dir(demo_harness_dir())[0], 2000)
    assert "max_reply_chars: 220" in files["prompt.yaml"]
    lines = _lines(
        demo_sets_dir / "dev.jsonl", 8, lambda c: len(c["gold"].get("reference_reply") or "") > 40
    )
    cases = [json.loads(line) for line in lines]
    dataset = dataset_import(
        name="long-replies",
        text="\n".join(lines),
        source="dev.jsonl",
        actor=personas.admin,
        catalogue=json.loads((demo_sets_dir / "catalogue.json").read_text()),
    )
    script = write_script(cases=cases, path=tmp_path / "shortcut.json")
    endpoint = ModelEndpoint.objects.create(
        name="shortcut", route=ModelEndpoint.SCRIPTED, script_path=str(script)
    )
    version = harness_import(
        files=files, author=personas.admin, message="length hook pinned"
    ).version
    with django_capture_on_commit_callbacks(execute=True):
        evolution = evolution_start(
            name="shorter replies",
            version=version,
            dataset=dataset,
            endpoint=endpoint,
            actor=personas.operator,
        )
    stage = evolution.stages.get()
    parent = CaseResult.objects.filter(run=stage.parent_run)
    assert parent.count() == 8 and not parent.filter(reason_codes__contains=",over_long,").exists()

    # the reviewer edits the candidate in the editor: replies of at most 40 characters
    draft = draft_create(
        harness=version.harness, base_version=version, owner=personas.reviewer, title="shorter"
    )
    prompt = files["prompt.yaml"].replace("max_reply_chars: 220", "max_reply_chars: 40")
    draft = draft_file_save(
        draft=draft,
        path="prompt.yaml",
        text=prompt,
        base_revision=draft.revision,
        actor=personas.reviewer,
    ).draft
    Stage.objects.filter(pk=stage.pk).update(draft=draft)
    with django_capture_on_commit_callbacks(execute=True):
        stage = candidate_build(stage=Stage.objects.get(pk=stage.pk), actor=personas.reviewer)
    stage.refresh_from_db()
    candidate = CaseResult.objects.filter(run=stage.candidate_run)
    long_replies = [r for r in candidate if len(r.reply) > 40]
    assert long_replies and all(
        "over_long" in r.reasons and r.effectiveness <= 0.5 for r in long_replies
    )
    failing = {x["case_id"]: x["reasons"] for x in stage.comparison["newly_failing"]}
    assert {r.case_id for r in long_replies if parent.get(case_id=r.case_id).passed} <= set(failing)
    assert all("over_long" in failing[r.case_id] for r in long_replies if r.case_id in failing)


def test_the_regression_report_and_the_command_line_agree_on_newly_failing(
    personas, demo_sets_dir, tmp_path
):
    from evolution_testing import small_world

    from evaluation.compare import compare_runs as cli_compare
    from studio.evolution.comparison import compare_runs as studio_compare

    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir,
        files=read_dir(demo_harness_dir())[0],
        actor=personas.admin,
        size=4,
        tmp_path=tmp_path,
    )
    ids = list(dataset.cases.order_by("case_id").values_list("case_id", flat=True))
    # full -> half effective (newly failing); wrong -> worse (failing before and after: not newly
    # failing); half -> full (newly passing); full -> full
    scores = [
        ((1, 1.0), (1, 0.5)),
        ((0, 1.0), (0, 0.0)),
        ((1, 0.5), (1, 1.0)),
        ((1, 1.0), (1, 1.0)),
    ]
    runs, folders = [], []
    for side in (0, 1):
        run = EvalRun.objects.create(
            version=version,
            dataset=dataset,
            endpoint=endpoint,
            case_ids=ids,
            status=EvalRun.SUCCEEDED,
        )
        folder = tmp_path / f"run{side}"
        folder.mkdir()
        lines = []
        for case_id, pair in zip(ids, scores, strict=True):
            acc, eff = pair[side]
            verdict = {
                "accuracy": acc,
                "effectiveness": eff,
                "avg": (acc + eff) / 2,
                "rubric_avg": None,
                "reasons": []
                if acc and eff == 1
                else [{"code": "over_long", "dimension": "effectiveness"}],
            }
            CaseResult.objects.create(
                run=run,
                case_id=case_id,
                category="product_qa",
                accuracy=acc,
                effectiveness=eff,
                avg=(acc + eff) / 2,
                verdict=verdict,
                trajectory={},
                reason_codes=",over_long," if verdict["reasons"] else "",
            )
            lines.append(json.dumps({"id": case_id, "category": "product_qa", "verdict": verdict}))
        (folder / "results.jsonl").write_text("\n".join(lines) + "\n")
        runs.append(run)
        folders.append(folder)
    studio = studio_compare(parent=runs[0], candidate=runs[1], resamples=200)
    cli = cli_compare(run_a=folders[0], run_b=folders[1], resamples=200)
    assert [x["case_id"] for x in studio["newly_failing"]] == [ids[0]]
    assert [x["case_id"] for x in studio["newly_passing"]] == [ids[2]]
    assert studio["newly_failing"][0]["reasons"] == "over_long"
    for key in ("newly_failing", "newly_passing", "overall", "per_category"):
        assert studio[key] == cli[key]
