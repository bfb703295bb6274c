"""Judges: known answers from a fixture file, calibration on the generated dev-set, LLM judge,
panel."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from evaluation.calibration import calibrate_judge, calibration_markdown
from evaluation.cases import load_cases
from evaluation.judges import LLMJudge, PanelJudge, ProgrammaticJudge, Verdict, make_judge
from evaluation.world.sets import generate
from harness.livestream.catalogue import Catalogue
from harness.policies import Policy, PolicyOutput, RoleModel, ToolCall
from harness.policies.roles import ROLES

TESTDATA = Path(__file__).parent / "testdata"
KNOWN = [
    json.loads(line) for line in (TESTDATA / "judge_known_answers.jsonl").read_text().splitlines()
]
CATALOGUE = Catalogue.load(TESTDATA / "catalogue_small.json")


@pytest.mark.parametrize("row", KNOWN, ids=[r["name"] for r in KNOWN])
def test_programmatic_judge_gives_the_known_answer(row):
    judge = ProgrammaticJudge(catalogue=CATALOGUE)
    verdict = judge.judge(
        case=row["case"], reply=row["reply"], route=row["route"], trajectory=row["trajectory"]
    )
    expect = row["expect"]
    assert (verdict.accuracy, verdict.effectiveness) == (
        expect["accuracy"],
        expect["effectiveness"],
    ), verdict.reasons
    assert sorted(set(verdict.reason_codes)) == sorted(expect["reasons"])
    if expect["rubrics"]:
        assert verdict.rubrics == expect["rubrics"]
    assert verdict.avg == (expect["accuracy"] + expect["effectiveness"]) / 2


def test_trajectory_dimensions_are_scored():
    row = next(r for r in KNOWN if r["name"] == "trajectory: no skill, repeated call")
    verdict = ProgrammaticJudge(catalogue=CATALOGUE).judge(
        case=row["case"], reply=row["reply"], trajectory=row["trajectory"]
    )
    assert verdict.dimensions["skill_selection"] == 0.0
    assert verdict.dimensions["tool_rationality"] == 0.5
    assert Verdict.from_dict(verdict.to_dict()).reason_codes == verdict.reason_codes


def test_programmatic_judge_recovers_the_dev_set_defects(tmp_path):
    generate(out=tmp_path, seed=5)
    cases = load_cases(tmp_path / "dev.jsonl")
    judge = ProgrammaticJudge(catalogue=Catalogue.load(tmp_path / "catalogue.json"))
    report = calibrate_judge(cases=cases, judge=judge)
    assert report["n"] == 482
    assert report["accuracy"]["agreement"] >= 0.95
    assert report["accuracy"]["kappa"] >= 0.85
    assert report["effectiveness"]["agreement"] >= 0.9
    assert "| Accuracy |" in calibration_markdown(report)


def test_calibration_reports_a_judge_that_disagrees():
    class AlwaysRight:
        name = "always-right"

        def judge(self, **_):
            return Verdict(accuracy=1, effectiveness=1.0)

    cases = [
        {
            "id": "a",
            "candidates": [
                {
                    "id": "c1",
                    "reply": "x",
                    "defect": "wrong_price",
                    "human": {"accuracy": 0, "effectiveness": 0.5},
                }
            ],
        },
        {
            "id": "b",
            "candidates": [
                {"id": "c1", "reply": "y", "human": {"accuracy": 1, "effectiveness": 1}}
            ],
        },
    ]
    report = calibrate_judge(cases=cases, judge=AlwaysRight())
    assert report["accuracy"]["agreement"] == 0.5
    assert report["accuracy"]["disagreements"][0]["id"] == "a/c1"
    assert report["accuracy_agreement_by_defect"] == {"good": 1.0, "wrong_price": 0.0}


def test_calibration_shows_the_judge_a_labelled_replys_trajectory():
    """A reply labelled from real traffic keeps its trajectory; the judge sees it, as in
    evaluation."""
    seen = []

    class Recording:
        name = "recording"

        def judge(self, *, case, reply, route="public", trajectory=None):
            seen.append(trajectory)
            return Verdict(accuracy=1, effectiveness=1.0)

    trajectory = {"request_id": "req-17", "tool_calls": [{"name": "get_product_info_by_link_id"}]}
    cases = [
        {
            "id": "a",
            "candidates": [
                {
                    "id": "c1",
                    "reply": "x",
                    "trajectory": trajectory,
                    "human": {"accuracy": 1, "effectiveness": 1},
                }
            ],
        },
        {
            "id": "b",
            "candidates": [
                {"id": "c1", "reply": "y", "human": {"accuracy": 1, "effectiveness": 1}}
            ],
        },
    ]
    calibrate_judge(cases=cases, judge=Recording())
    assert seen == [trajectory, None]


class Recording(Policy):
    """A policy double: answers the given outputs in order and records each call's messages and
    tools."""

    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.requests = []

    def generate(self, messages, *, tools=None, settings=None):
        self.requests.append(
            {"messages": [dict(m) for m in messages], "tools": tools, "settings": settings}
        )
        return self.outputs.pop(0)


def judge_with(policy, label="judge-m"):
    return LLMJudge(model=RoleModel(role="judge", policy=policy, label=label), catalogue=CATALOGUE)


VERDICT = (
    'Checked. {"accuracy": 0, "effectiveness": 0.5, "reasons": '
    '["unsupported_price", "made_up"], "explanation": "says 79"}'
)


def test_llm_judge_uses_evidence_tools_and_parses_its_verdict():
    policy = Recording(
        [
            PolicyOutput(text="", tool_calls=[ToolCall("get_product", {"link_id": 1}, "call_1")]),
            PolicyOutput(text=VERDICT, input_tokens=30, output_tokens=12),
        ]
    )
    judge = judge_with(policy)
    row = next(r for r in KNOWN if r["name"] == "wrong price")
    verdict = judge.judge(case=row["case"], reply=row["reply"])
    assert (verdict.accuracy, verdict.effectiveness) == (0, 0.5)
    assert (
        verdict.reason_codes == ["unsupported_price", "llm:made_up"]
        and verdict.judge == "llm:judge-m"
    )
    tool_message = policy.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and '"price": 89.0' in tool_message["content"]
    assert policy.requests[1]["messages"][-2]["tool_calls"][0]["function"]["name"] == "get_product"
    assert "Luma SPF50" not in policy.requests[0]["messages"][0]["content"]  # rubric is case-free
    assert policy.requests[0]["settings"].temperature == 0.0
    assert judge.model.usage() == {
        "role": "judge",
        "model": "judge-m",
        "calls": 2,
        "failed": 0,
        "input_tokens": 30,
        "output_tokens": 12,
        "seconds": 0.0,
    }


def test_llm_judge_reads_tool_calls_a_local_model_writes_in_the_text_protocol():
    policy = Recording(
        [
            PolicyOutput(
                text='<tool_call>{"name": "get_product", "arguments": {"link_id": 1}}</tool_call>'
            ),
            PolicyOutput(text="<think>89 it is</think>" + VERDICT),
        ]
    )
    verdict = judge_with(policy).judge(case=KNOWN[0]["case"], reply="x")
    assert (verdict.accuracy, verdict.effectiveness) == (0, 0.5)
    result = policy.requests[1]["messages"][-1]
    assert result["role"] == "user" and '"price": 89.0' in result["content"]


def test_llm_judge_rejects_out_of_range_scores():
    judge = judge_with(
        Recording([PolicyOutput(text='{"accuracy": 3, "effectiveness": 1}')]), label="m"
    )
    with pytest.raises(ValueError, match="out of range"):
        judge.judge(case=KNOWN[0]["case"], reply="x")


def test_llm_judge_over_an_openai_compatible_server_with_the_judge_roles_client(fake_openai):
    fake_openai.answers.append(
        '{"accuracy": 1, "effectiveness": 1, "reasons": [], "explanation": "fine"}'
    )
    judge = make_judge(f"llm:{fake_openai.url}:demo-model", catalogue=CATALOGUE)
    verdict = judge.judge(case=KNOWN[0]["case"], reply="x")
    assert (verdict.accuracy, verdict.effectiveness, verdict.judge) == (1, 1.0, "llm:demo-model")
    body = fake_openai.bodies[-1]
    assert body["model"] == "demo-model" and [t["function"]["name"] for t in body["tools"]] == [
        "get_product",
        "get_promotions",
        "search_faq",
    ]
    client = judge.model.policy.client
    assert (
        (client.timeout, client.max_retries)
        == (ROLES["judge"].timeout_s, ROLES["judge"].retries)
        == (600.0, 2)
    )


def test_llm_judge_on_the_local_route_calls_the_model_in_process():
    """The tiny random model answers no JSON: the judge says so, after calling the model on the
    torch route."""
    judge = make_judge("llm:torch:tiny", catalogue=CATALOGUE)
    assert type(judge.model.policy).__name__ == "TransformersPolicy"
    judge.model.settings = replace(judge.model.settings, max_new_tokens=4)
    with pytest.raises(ValueError, match="judge answer holds no JSON object"):
        judge.judge(case=KNOWN[0]["case"], reply="x")
    assert judge.model.usage()["calls"] == 1 and judge.model.calls[0].output_tokens > 0


def test_panel_majority_vote_and_failed_members():
    class Fixed:
        def __init__(self, name, acc, eff, fail=False):
            self.name, self.acc, self.eff, self.fail = name, acc, eff, fail

        def judge(self, **_):
            if self.fail:
                raise ValueError("endpoint down")
            return Verdict(accuracy=self.acc, effectiveness=self.eff)

    panel = PanelJudge(judges=[Fixed("a", 1, 1.0), Fixed("b", 0, 0.5), Fixed("c", 1, 0.5)])
    verdict = panel.judge(case={}, reply="x")
    assert (verdict.accuracy, verdict.effectiveness) == (1, 0.5)
    tie = PanelJudge(judges=[Fixed("a", 1, 1.0), Fixed("b", 0, 1.0), Fixed("c", 1, 1.0, fail=True)])
    verdict = tie.judge(case={}, reply="x")
    assert verdict.accuracy == 0 and verdict.dimensions["judges_failed"] == 1.0


def test_make_judge_specs():
    assert make_judge("programmatic", catalogue=CATALOGUE).name == "programmatic"
    assert make_judge("panel:programmatic|programmatic", catalogue=CATALOGUE).name.startswith(
        "panel("
    )
    with pytest.raises(ValueError, match="valid: programmatic"):
        make_judge("gpt", catalogue=CATALOGUE)
    with pytest.raises(ValueError, match="judge spec 'llm': .*names no model"):
        make_judge("llm", catalogue=CATALOGUE)
    with pytest.raises(ValueError, match="judge spec 'llm:qwen': unknown policy 'qwen'"):
        make_judge("llm:qwen", catalogue=CATALOGUE)
