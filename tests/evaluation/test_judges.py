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
from harness.livestream import demo_catalogue
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


# --- the rubric of docs/evaluation.md on the failures a person found (issue 48) ---------------
# The demo catalogue: #2 Vitamin C Serum (159 yuan, 10% off, 15% vitamin C), #4 Wireless Earbuds
# Pro (299 yuan, battery "8 h (30 h with case)", stock 35, no material spec).
DEMO = demo_catalogue()


def rubric_case(category, comment, *, facts=(), tools=(), current=1):
    return {
        "id": "r1",
        "category": category,
        "comments": [{"user": "viewer_7", "text": comment}],
        "room": {"current_link_id": current, "shelf": [1, 2, 3, 4, 5]},
        "products": [1, 2, 3, 4, 5],
        "gold": {"route": "public", "required_facts": list(facts), "tool_calls": list(tools)},
    }


def info(link):
    return {"name": "get_product_info_by_link_id", "arguments": {"link_id": link}}


BATTERY = {
    "id": "battery#4",
    "kind": "spec",
    "text": "#4 battery = 8 h (30 h with case)",
    "link_id": 4,
    "any_of": ["8 h", "30 h"],
}
PRICE_4 = {"id": "price#4", "kind": "price", "text": "299", "value": 299, "link_id": 4}
SERUM_DEAL = {
    "id": "promo#2",
    "kind": "promotion",
    "text": "10% off",
    "link_id": 2,
    "any_of": ["10%"],
}
RUBRIC = [
    # (name, case, reply, the scores a person gives by the rubric)
    (
        "a price for a battery question answers another attribute",
        rubric_case("product_qa", "how long does the battery of link 4 last?", facts=[BATTERY]),
        "The Wireless Earbuds Pro (link 4) is 299 yuan in the live room.",
        (1, 0.0),
    ),
    (
        "an invented spec and unit is inaccurate",
        rubric_case("product_qa", "how much are the earbuds?", facts=[PRICE_4]),
        "The Wireless Earbuds Pro on link #4 has material 35 cc.",
        (0, 0.0),
    ),
    (
        "the discount of another promotion is not this product's discount",
        rubric_case("promotion", "is the serum discounted today?", facts=[SERUM_DEAL]),
        "It's 15% for the Vitamin C Serum on number 2.",
        (0, 0.0),
    ),
    (
        "an after-sale complaint answered with a price",
        rubric_case("aftersale", "one of my earbuds from link 4 does not charge :("),
        "Yes! That's the Wireless Earbuds Pro, link #4. It's 299 yuan.",
        (1, 0.0),
    ),
    (
        "a clarification question back to a greeting",
        rubric_case("greeting", "hi everyone, just joined"),
        "Could you tell me the link number of the one you mean?",
        (1, 0.0),
    ),
    (
        "a greeting to a place nobody named",
        rubric_case("greeting", "hi everyone, just joined"),
        "Hello to Wuhan! Welcome to the stream.",
        (0, 1.0),
    ),
    (
        "a canned line that ignores a chit-chat question",
        rubric_case("chitchat", "what song is playing?"),
        "Thanks for hanging out with us! Let me know if anything catches your eye.",
        (1, 0.5),
    ),
    (
        "the price of the product on screen for a question about another link",
        rubric_case("product_qa", "How much is product #3?"),
        "Link #1 is the Hydrating Face Cream, 129 yuan.",
        (1, 0.0),
    ),
    (
        "a link called by another product's name",
        rubric_case("product_qa", "what is #3?"),
        "Link #3 is the Hydrating Face Cream.",
        (0, 0.0),  # the asked fact (what #3 is) is the wrong one: as a wrong price to a price
    ),
    (
        "a product question without required facts answered with another attribute",
        rubric_case("product_qa", "is #4 waterproof?"),
        "Link #4 is 299 yuan tonight!",
        (1, 0.0),
    ),
]
GOOD = [
    (
        "battery answered",
        rubric_case("product_qa", "how long does the battery of link 4 last?", facts=[BATTERY]),
        "Link 4, the Wireless Earbuds Pro, lasts 8 h, 30 h with the case.",
    ),
    (
        "the serum's own discount",
        rubric_case("promotion", "is the serum discounted today?", facts=[SERUM_DEAL]),
        "Yes! The Vitamin C Serum on link 2 is 10% off today.",
    ),
    (
        "the serum's 15% vitamin C is a spec, not a discount",
        rubric_case("product_qa", "how much vitamin C is in #2?"),
        "The Vitamin C Serum (#2) has 15% vitamin C.",
    ),
    (
        "an after-sale complaint acknowledged and routed",
        rubric_case("aftersale", "one of my earbuds does not charge :("),
        "So sorry! Please contact customer service from your order page for a replacement.",
    ),
    (
        "a greeting welcomed",
        rubric_case("greeting", "hi everyone, just joined"),
        "Hi, welcome to the stream!",
    ),
    (
        "a place the viewer named",
        rubric_case("greeting", "hello from Wuhan"),
        "Hello to Wuhan! Welcome to the stream.",
    ),
    (
        "an ambiguous question asked back",
        rubric_case("clarification", "how much?", current=None),
        "Which product do you mean? Tell me the link number.",
    ),
    (
        "a shipping question answered with the shop's policy",
        rubric_case("faq", "when will my order ship?"),
        "Orders ship within 48 hours from our Hangzhou warehouse.",
    ),
    (
        "a stock count of the product asked about",
        rubric_case("product_qa", "any earbuds left on #4?"),
        "Yes, link #4 is in stock, 35 left.",
    ),
]


@pytest.mark.parametrize("name,case,reply,expect", RUBRIC, ids=[r[0] for r in RUBRIC])
def test_judge_scores_what_a_person_scores_by_the_rubric(name, case, reply, expect):
    verdict = ProgrammaticJudge(catalogue=DEMO).judge(case=case, reply=reply)
    assert (verdict.accuracy, verdict.effectiveness) == expect, verdict.reasons
    assert all(r.detail for r in verdict.reasons)  # every finding says why


@pytest.mark.parametrize("name,case,reply", GOOD, ids=[g[0] for g in GOOD])
def test_judge_gives_full_marks_to_a_right_and_useful_reply(name, case, reply):
    verdict = ProgrammaticJudge(catalogue=DEMO).judge(case=case, reply=reply)
    assert (verdict.accuracy, verdict.effectiveness) == (1, 1.0), verdict.reasons


def test_a_case_without_required_facts_is_not_full_marks_for_any_english_reply():
    judge = ProgrammaticJudge(catalogue=DEMO)
    case = rubric_case("product_qa", "how heavy is the water bottle on link 5?")
    for reply in ("Great pick, lots of viewers love it!", "Welcome to the stream everyone!"):
        assert judge.judge(case=case, reply=reply).effectiveness == 0.0


def loaded_by(tool, skill, seq, round_=1):
    return (
        {
            "seq": seq,
            "round": round_,
            "name": tool,
            "arguments": {"name": skill},
            "binding": "builtin:flow.load_skill",
            "result": {"skill": skill, "text": "..."},
        },
        {"seq": seq + 1, "round": round_, "skill": skill, "kind": "reply", "ok": True},
    )


def test_the_skill_loading_tool_is_the_one_the_trajectorys_harness_binds():
    """Under a Harness whose load tool is renamed, loading skills is not a redundant data call."""
    case = rubric_case(
        "product_qa",
        "how much is #4?",
        facts=[PRICE_4],
        tools=[info(4)],
    )
    case["gold"]["reply_skills"] = ["item_qa"]
    first_load, first_record = loaded_by("open_playbook", "item_qa", 1)
    again, again_record = loaded_by("open_playbook", "item_qa", 5, round_=2)
    trajectory = {
        "outcome": "replied",
        "skill_loads": [first_record, again_record],
        "tool_calls": [
            first_load,
            {**info(4), "seq": 3, "round": 1, "result": {"link_id": 4, "price": 299.0}},
            again,
        ],
    }
    verdict = ProgrammaticJudge(catalogue=DEMO).judge(
        case=case, reply="Link #4 is 299 yuan.", trajectory=trajectory
    )
    assert verdict.dimensions["tool_rationality"] == 1.0, verdict.reasons
    assert verdict.dimensions["skill_selection"] == 1.0
    # without a binding (an older record) the call just before each skill load is the load tool
    for call in trajectory["tool_calls"]:
        call.pop("binding", None)
    verdict = ProgrammaticJudge(catalogue=DEMO).judge(
        case=case, reply="Link #4 is 299 yuan.", trajectory=trajectory
    )
    assert verdict.dimensions["tool_rationality"] == 1.0, verdict.reasons


def test_a_refused_or_failed_tool_call_is_not_a_call_made():
    case = rubric_case("product_qa", "how much is #4?", facts=[PRICE_4], tools=[info(4)])
    case["gold"]["rubrics"] = ["TC"]
    blocked = {
        **info(4),
        "seq": 1,
        "round": 1,
        "error": "blocked: price lookups are paused",
        "error_kind": "blocked",
    }
    judge = ProgrammaticJudge(catalogue=DEMO)
    verdict = judge.judge(
        case=case, reply="Link #4 is 299 yuan.", trajectory={"tool_calls": [blocked]}
    )
    assert verdict.rubrics["TC"] is False and "missing_tool_call" in verdict.reason_codes
    # a retry after an error is the first call made, not a redundant second one
    retried = {**info(4), "seq": 2, "round": 2, "result": {"link_id": 4, "price": 299.0}}
    verdict = judge.judge(
        case=case, reply="Link #4 is 299 yuan.", trajectory={"tool_calls": [blocked, retried]}
    )
    assert verdict.rubrics["TC"] is True
    assert verdict.dimensions["tool_rationality"] == 1.0, verdict.reasons


def test_a_tool_result_supports_figures_only_for_the_product_it_was_about():
    case = rubric_case("product_qa", "how much is #4?", facts=[PRICE_4], tools=[info(4)])
    trajectory = {
        "tool_calls": [
            {**info(4), "seq": 1, "round": 1, "result": {"link_id": 4, "price": 299.0}},
            {**info(3), "seq": 2, "round": 1, "result": {"link_id": 3, "price": 89.0}},
        ]
    }
    judge = ProgrammaticJudge(catalogue=DEMO)
    wrong = judge.judge(case=case, reply="Link #4 is 89 yuan.", trajectory=trajectory)
    assert wrong.accuracy == 0 and "unsupported_price" in wrong.reason_codes


# --- rules calibrated on the development part of the human set (issue 48) --------------------
# Each is a rule of the labelling guide as people applied it; the replies are made up here.
def _two_links(category, comment, a, b, price_a, price_b):
    case = rubric_case(category, comment)
    case["gold"]["required_facts"] = [
        {"id": f"price#{a}", "kind": "price", "text": f"#{a}", "value": price_a, "link_id": a},
        {"id": f"price#{b}", "kind": "price", "text": f"#{b}", "value": price_b, "link_id": b},
    ]
    return case


CALIBRATED = [
    (
        "a wrong fact added to a right answer spoils it",
        rubric_case("product_qa", "how much are the earbuds?", facts=[PRICE_4]),
        "The Wireless Earbuds Pro (#4) are 299 yuan, and 50% off for this room only!",
        (0, 0.5),
    ),
    (
        "a wrong fact that is the asked one answers wrongly",
        rubric_case("product_qa", "how much are the earbuds on #4?", facts=[PRICE_4]),
        "The Wireless Earbuds Pro on link 4 are 259 yuan.",
        (0, 0.0),
    ),
    (
        "a reply that only names the asked product states none of the asked facts",
        rubric_case("product_qa", "how much is link 4?", facts=[PRICE_4]),
        "Link 4 is the Wireless Earbuds Pro, a real favourite!",
        (1, 0.0),
    ),
    (
        "a reply saying there is no information on a product that has its facts",
        rubric_case("product_qa", "how much is link 4?", facts=[PRICE_4]),
        "The Wireless Earbuds Pro on link 4 has no product information available yet.",
        (0, 0.0),
    ),
    (
        "the Harness's fallback line without a recorded trajectory",
        rubric_case("product_qa", "how much is link 4?", facts=[PRICE_4]),
        "Thanks for asking! Let me double-check that for you, one moment.",
        (1, 0.0),
    ),
    (
        "a stand-in that promises to look into it answers nothing",
        rubric_case("faq", "do you ship abroad?"),
        "About shipping: our team will look into it for you soon.",
        (1, 0.0),
    ),
    (
        "a comparison where only one product is answered",
        _two_links("product_qa", "torn between #3 and #4, help?", 3, 4, 89.0, 299.0),
        "Link #3, the Sunscreen SPF50, is 89 yuan.",
        (1, 0.5),
    ),
    (
        "a request to show a product next answered with its price only",
        {
            **rubric_case("presentation_order", "can you show link 5 next?"),
            "gold": {
                "route": "public",
                "required_facts": [
                    {"id": "order#5", "kind": "order", "text": "#5 next", "value": 5, "link_id": 5}
                ],
            },
        },
        "Link 5 is the Thermal Water Bottle, 59 yuan.",
        (1, 0.5),
    ),
    (
        "a stock friendly line to a remark with a detail",
        rubric_case("chitchat", "my dog is watching the stream with me"),
        "So happy you're here! Ask me anything about the products anytime.",
        (1, 0.5),
    ),
    (
        "a thank-you line to a question nobody thanked or complimented in",
        rubric_case("chitchat", "what city is the studio in?"),
        "Aw, thank you! I'm having a great time with all of you.",
        (1, 0.0),
    ),
]
CALIBRATED_GOOD = [
    (
        "a welcome to a viewer who says where they watch from",
        rubric_case("chitchat", "good evening from Nanjing"),
        "So happy you're here! Ask me anything about the products anytime.",
    ),
    (
        "an after-sale problem acknowledged and routed while the host checks",
        rubric_case("aftersale", "my earbuds from last week stopped charging"),
        "So sorry! Let me check on that - please contact customer service from your order page.",
    ),
    (
        "a friendly line that takes up the viewer's remark",
        rubric_case("chitchat", "my dog is watching the stream with me"),
        "Say hi to your dog for me! Glad you're both watching.",
    ),
    (
        "a thank-you to a compliment",
        rubric_case("chitchat", "your earrings are so pretty"),
        "Aw, thank you! I'm having a great time with all of you.",
    ),
    (
        "a request to show a product next taken up",
        rubric_case("presentation_order", "can you show link 5 next?"),
        "Sure! Link 5, the Thermal Water Bottle, is up next.",
    ),
    (
        "a comparison with both products answered",
        _two_links("product_qa", "torn between #3 and #4, help?", 3, 4, 89.0, 299.0),
        "The Sunscreen SPF50 (#3) is 89 yuan, the Wireless Earbuds Pro (#4) 299 yuan.",
    ),
]


@pytest.mark.parametrize("name,case,reply,expect", CALIBRATED, ids=[r[0] for r in CALIBRATED])
def test_judge_follows_the_rules_people_labelled_by(name, case, reply, expect):
    verdict = ProgrammaticJudge(catalogue=DEMO).judge(case=case, reply=reply)
    assert (verdict.accuracy, verdict.effectiveness) == expect, verdict.reasons
    assert all(r.detail for r in verdict.reasons)


@pytest.mark.parametrize("name,case,reply", CALIBRATED_GOOD, ids=[g[0] for g in CALIBRATED_GOOD])
def test_judge_keeps_full_marks_where_people_gave_them(name, case, reply):
    verdict = ProgrammaticJudge(catalogue=DEMO).judge(case=case, reply=reply)
    assert (verdict.accuracy, verdict.effectiveness) == (1, 1.0), verdict.reasons


def test_a_harness_names_its_own_fallback_lines():
    """The fallback wording is the Harness's: a judge given a Harness's lines knows them."""
    case = rubric_case("product_qa", "how much is link 4?", facts=[PRICE_4])
    line = "Hang tight, our host is busy right now."
    default = ProgrammaticJudge(catalogue=DEMO).judge(case=case, reply=line)
    assert "fallback_reply" not in default.reason_codes
    judge = ProgrammaticJudge(catalogue=DEMO, fallback_replies=(line,))
    verdict = judge.judge(case=case, reply=line)
    assert verdict.effectiveness == 0.0 and "fallback_reply" in verdict.reason_codes
