"""IFEval: the official lm-eval checkers, run offline, give the expected verdicts."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.ifeval import (
    DEFAULT_IFEVAL_PATH,
    IFEVAL_PATH_ENV,
    IFEvalSourceMissing,
    check_response,
    load_ifeval_prompts,
    run_ifeval,
    score_responses,
)

TESTDATA = Path(__file__).parent / "testdata"
HANDWRITTEN = [
    json.loads(line) for line in (TESTDATA / "ifeval_handwritten.jsonl").read_text().splitlines()
]


@pytest.fixture(autouse=True)
def _offline_nltk(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_STUDIO_HOME", str(tmp_path / "home"))


@pytest.mark.parametrize(
    "case", HANDWRITTEN, ids=[f"{c['instruction_id']}-{c['strict']}" for c in HANDWRITTEN]
)
def test_checker_verdict_on_handwritten_response(case):
    prompt = {
        "key": 1,
        "prompt": case["prompt"],
        "instruction_id_list": [case["instruction_id"]],
        "kwargs": [case["kwargs"]],
    }
    verdict = check_response(prompt=prompt, response=case["response"])
    assert verdict["inst_level_strict_acc"] == [case["strict"]]


def test_every_instruction_of_the_official_registry_is_covered():
    from lm_eval.tasks.ifeval.instructions_registry import INSTRUCTION_DICT

    covered = {c["instruction_id"] for c in HANDWRITTEN}
    assert covered == set(INSTRUCTION_DICT)


official = pytest.mark.skipif(not DEFAULT_IFEVAL_PATH.is_file(),
                              reason=f"the official IFEval file is not at {DEFAULT_IFEVAL_PATH}")


@official
def test_the_official_file_holds_the_541_prompts():
    prompts = load_ifeval_prompts(source=DEFAULT_IFEVAL_PATH)
    assert len(prompts) == 541
    assert load_ifeval_prompts(source=DEFAULT_IFEVAL_PATH, limit=5) == prompts[:5]


def test_without_a_source_the_prompts_come_from_the_configured_path(tmp_path, monkeypatch):
    assert [p["key"] for p in load_ifeval_prompts()] == [1, 2, 3, 4, 5, 6]  # the suite's fixture
    mine = tmp_path / "mine.jsonl"
    mine.write_text(json.dumps({"key": 9, "prompt": "Say hi.", "instruction_id_list": ["punctuation:no_comma"],
                                "kwargs": [{}]}) + "\n")
    monkeypatch.setenv(IFEVAL_PATH_ENV, str(mine))
    assert [p["key"] for p in load_ifeval_prompts(limit=3)] == [9]


def test_the_fixture_is_in_the_official_format_and_scored_by_the_official_checkers():
    prompts = load_ifeval_prompts()
    assert all(len(p["instruction_id_list"]) == len(p["kwargs"]) for p in prompts)
    result = score_responses(prompts=prompts, responses=["One, two, three."] * len(prompts))
    assert result.n_prompts == 6 and 0 < result.inst_strict < 1


def test_a_missing_configured_file_says_where_it_looked_and_how_to_set_it(tmp_path, monkeypatch):
    monkeypatch.setenv(IFEVAL_PATH_ENV, str(tmp_path / "nowhere" / "input_data.jsonl"))
    with pytest.raises(IFEvalSourceMissing) as raised:
        load_ifeval_prompts()
    assert str(raised.value) == (
        f"IFEval prompts not found at {tmp_path / 'nowhere' / 'input_data.jsonl'} (from HARNESS_IFEVAL_PATH); "
        "give a JSONL file in the official format (fields key, prompt, instruction_id_list, kwargs) "
        "or 'google/IFEval' where a hub is reachable")
    monkeypatch.delenv(IFEVAL_PATH_ENV)
    if not DEFAULT_IFEVAL_PATH.is_file():  # a clone without ../shared: the default names the variable to set
        with pytest.raises(IFEvalSourceMissing, match="the default; set HARNESS_IFEVAL_PATH"):
            load_ifeval_prompts()


def test_cli_with_no_ifeval_file_is_one_line_and_exit_2(tmp_path):
    missing = tmp_path / "absent.jsonl"
    done = subprocess.run([sys.executable, "-m", "evaluation", "ifeval", "--policy", "tiny", "--limit", "1",
                           "--no-progress"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, IFEVAL_PATH_ENV: str(missing)})
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"IFEval prompts not found at {missing} (from HARNESS_IFEVAL_PATH)" in done.stderr


def test_loose_accepts_what_strict_rejects_and_levels_are_counted_separately():
    prompt = {
        "key": 7,
        "prompt": "Reply in lowercase and mention the beach.",
        "instruction_id_list": ["change_case:english_lowercase", "keywords:existence"],
        "kwargs": [{}, {"keywords": ["beach"]}],
    }
    # the first line breaks the lowercase rule; loose scoring drops it.
    result = score_responses(prompts=[prompt], responses=["Sure!\nwe love the beach."])
    assert result.prompt_strict == 0.0 and result.inst_strict == 0.5
    assert result.prompt_loose == 1.0 and result.inst_loose == 1.0
    assert result.per_family_strict == {"change_case": 0.0, "keywords": 1.0}


def test_run_ifeval_generates_and_scores(tmp_path):
    path = tmp_path / "two.jsonl"
    rows = [
        {"key": 1, "prompt": "say hi without commas", "instruction_id_list": ["punctuation:no_comma"],
         "kwargs": [{}]},
        {"key": 2, "prompt": "say hi in capitals", "instruction_id_list": ["change_case:english_capital"],
         "kwargs": [{}]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run_ifeval(generate=lambda p: "hello there friend", source=path, progress=False)
    assert result.n_prompts == 2 and result.prompt_strict == 0.5
    assert [r["key"] for r in result.rows] == [1, 2]


def test_run_ifeval_resumes_from_saved_responses(tmp_path):
    path = tmp_path / "three.jsonl"
    rows = [{"key": k, "prompt": f"p{k}", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
            for k in (1, 2, 3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    saved = tmp_path / "responses.jsonl"
    saved.write_text(json.dumps({"key": 1, "response": "a, b"}) + "\n" + '{"key": 2, "resp')  # killed mid-line
    asked = []
    result = run_ifeval(generate=lambda p: asked.append(p) or "no commas here", source=path,
                        progress=False, responses_path=saved)
    assert asked == ["p2", "p3"]
    assert [r["prompt_level_strict_acc"] for r in result.rows] == [False, True, True]
    assert [json.loads(line)["key"] for line in saved.read_text().splitlines()] == [1, 2, 3]


def test_bad_prompt_file_names_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"key": 1, "prompt": "x", "instruction_id_list": [], "kwargs": []}\n{"key": 2}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: missing field\(s\) prompt"):
        load_ifeval_prompts(source=path)


def test_nltk_data_cli_writes_punkt_tab_that_nltk_reads(tmp_path):
    from evaluation.nltk_data import main as nltk_main

    assert nltk_main(["--dir", str(tmp_path / "nd"), "--quiet"]) == 0
    folder = tmp_path / "nd" / "tokenizers" / "punkt_tab" / "english"
    assert sorted(p.name for p in folder.iterdir()) == [
        "abbrev_types.txt", "collocations.tab", "ortho_context.tab", "sent_starters.txt"]
    import nltk
    from nltk.tokenize.punkt import PunktSentenceTokenizer, load_punkt_params

    from evaluation.nltk_data import ensure_nltk_data

    ensure_nltk_data(root=tmp_path / "nd")  # NLTK only opens files under its data path
    pointer = nltk.data.find("tokenizers/punkt_tab/english/")
    assert str(pointer.path).startswith(str(tmp_path / "nd"))
    tokenizer = PunktSentenceTokenizer(load_punkt_params(pointer))
    assert tokenizer.tokenize("Dr. Li sells tea at 5 p.m. on Monday. It sells out.") == [
        "Dr. Li sells tea at 5 p.m. on Monday.", "It sells out."]
