"""A stage's self-evaluation: held-out subsets scored by the project's judge, resumable, written
into the run."""

from __future__ import annotations

import json


def test_evaluate_run_writes_scores_and_resumes(sft_run, tmp_path):
    import shutil

    from harness import demo_harness_dir
    from training.case_sources import held_out_cases, training_cases
    from training.self_eval import evaluate_run

    run = tmp_path / "run"
    shutil.copytree(sft_run, run)
    # the agent's calls capped at 8 new tokens (the tiny model never writes a valid reply: at the
    # default 256 each case ran 4 rounds of 256 tokens); the same path scores and records every set
    summary = evaluate_run(
        run_dir=run,
        harness_dir=demo_harness_dir(),
        cases=2,
        max_new_tokens=6,
        agent_max_new_tokens=8,
    )
    saved = json.loads((run / "eval.json").read_text())
    assert saved == summary
    for name in ("live_qa", "variant_qa", "prompt_robustness"):
        assert saved[name]["n"] >= 1 and 0 <= saved[name]["avg"] <= 100
    assert saved["ifeval"]["n"] == 1 and len(saved["ifeval"]["per_prompt"]) == 1
    # the writer's block is what the capability gate's one reader knows
    # (evaluation.gates.read_ifeval)
    from evaluation.gates import read_ifeval

    scores = read_ifeval(saved["ifeval"], source="eval.json")
    assert scores.n == 1 and scores.checkpoint.per_prompt == tuple(saved["ifeval"]["per_prompt"])
    rows = [
        json.loads(line) for line in (run / "eval" / "variant_qa.jsonl").read_text().splitlines()
    ]
    assert [r["id"] for r in rows] == [c["id"] for c in held_out_cases()[:2]]
    assert all(r["harness"].startswith("hsa") for r in rows)  # T2 runs under variants
    assert not {c["id"] for c in held_out_cases()} & {
        c["id"] for c in training_cases("", limit=10_000).cases
    }
    # a second call finds every item scored and runs no model call
    before = (run / "eval" / "live_qa.jsonl").read_text()
    evaluate_run(
        run_dir=run,
        harness_dir=demo_harness_dir(),
        cases=2,
        max_new_tokens=6,
        agent_max_new_tokens=8,
    )
    assert (run / "eval" / "live_qa.jsonl").read_text() == before


def test_side_by_side_evaluations_of_one_model_keep_each_others_scores(
    sft_run, tmp_path, monkeypatch
):
    """Two processes scoring one model on different sets (``ablation --step``) share summary.json:
    the one that finishes last must not write back the copy it read when it started."""
    from harness import demo_harness_dir
    from training import self_eval

    out = tmp_path / "eval"
    out.mkdir()

    def ifeval_while_another_process_finishes(policy, path, limit, max_new_tokens):
        # the other process finishes its T1 evaluation while this one is running
        (out / "summary.json").write_text(json.dumps({"live_qa": {"n": 3, "avg": 40.0}}))
        return {"n": 1, "prompt_strict": 100.0, "inst_strict": 100.0, "per_prompt": [True]}

    monkeypatch.setattr(self_eval, "_ifeval", ifeval_while_another_process_finishes)
    summary = self_eval.evaluate_model(
        model_dir=sft_run / "final",
        out_dir=out,
        harness_dir=demo_harness_dir(),
        sets=("ifeval",),
        n_ifeval=1,
    )
    saved = json.loads((out / "summary.json").read_text())
    assert saved == summary
    assert saved["live_qa"] == {"n": 3, "avg": 40.0} and saved["ifeval"]["per_prompt"] == [True]
    assert saved["model"] == str(sft_run / "final")


def test_a_stored_row_is_kept_only_for_the_same_case_under_the_same_harness(tmp_path):
    """Resuming keys on the case's content, not its id alone: a changed world generator builds
    other cases under the same ids, and their old rows must not be scored beside the new ones."""
    from training.self_eval import read_rows, score_cases

    class Counting:
        def __init__(self):
            self.scored = []

        def score(self, case):
            self.scored.append(case["id"])
            return {
                "id": case["id"],
                "category": case["category"],
                "reply": case["comment"],
                "route": "public",
                "outcome": "replied",
                "verdict": {
                    "accuracy": 1,
                    "effectiveness": 1.0,
                    "avg": 1.0,
                    "rubric_avg": None,
                    "reasons": [],
                    "dimensions": {},
                },
                "trajectory": {"rounds": 1},
                "latency_s": 0.1,
            }

    out = tmp_path / "live_qa.jsonl"
    scorer = Counting()
    cases = [{"id": f"c{i}", "category": "chitchat", "comment": f"hi {i}"} for i in range(3)]
    score_cases(items=[(c, "original") for c in cases], out=out, scorer_for=lambda key: scorer)
    assert scorer.scored == ["c0", "c1", "c2"]
    score_cases(items=[(c, "original") for c in cases], out=out, scorer_for=lambda key: scorer)
    assert scorer.scored == ["c0", "c1", "c2"]  # resumed: nothing scored again
    changed = [cases[0], {**cases[1], "comment": "another case under c1's id"}, cases[2]]
    rows = score_cases(
        items=[(changed[0], "original"), (changed[1], "original"), (changed[2], "hsa900001")],
        out=out,
        scorer_for=lambda key: scorer,
    )
    assert sorted(scorer.scored[3:]) == ["c1", "c2"]  # another case, another Harness: scored again
    assert [r["reply"] for r in rows] == ["hi 0", "another case under c1's id", "hi 2"]
    assert read_rows(out)["c1"]["reply"] == "another case under c1's id"
