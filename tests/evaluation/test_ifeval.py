"""IFEval: the official lm-eval checkers, run offline, give the expected verdicts."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.ifeval import (
    IFEVAL_PATH_ENV,
    IFEvalSourceMissing,
    check_response,
    describe_source,
    load_ifeval_prompts,
    run_ifeval,
    score_responses,
)
from evaluation.instruction_set import LABEL, generated_prompts

TESTDATA = Path(__file__).parent / "testdata"
FIXTURE = Path(__file__).parents[1] / "fixtures" / "ifeval" / "input_data.jsonl"
# The official file is never looked for by the product; these tests read it only where a tester
# names it.
OFFICIAL = Path(os.environ.get("HARNESS_TEST_IFEVAL_OFFICIAL", "/nonexistent/input_data.jsonl"))
HANDWRITTEN = [
    json.loads(line) for line in (TESTDATA / "ifeval_handwritten.jsonl").read_text().splitlines()
]


@pytest.fixture(autouse=True)
def _offline_nltk(tmp_path, monkeypatch):
    """A data home of the test's own, so that NLTK's data is written there (from the bundled
    package, never downloaded), holding the models already built (a fresh home would build them
    again: 30 s; tests/harness/test_model_cache.py builds them in a fresh one)."""
    from harness.model_cache import model_cache_dir

    home = tmp_path / "home"
    home.mkdir()
    (home / "models").symlink_to(model_cache_dir(), target_is_directory=True)
    monkeypatch.setenv("HARNESS_STUDIO_HOME", str(home))


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


official = pytest.mark.skipif(
    not OFFICIAL.is_file(),
    reason="HARNESS_TEST_IFEVAL_OFFICIAL does not name the official input_data.jsonl",
)


@official
def test_the_official_file_holds_the_541_prompts(monkeypatch):
    prompts = load_ifeval_prompts(source=OFFICIAL)
    assert len(prompts) == 541
    assert load_ifeval_prompts(source=OFFICIAL, limit=5) == prompts[:5]
    monkeypatch.setenv(
        IFEVAL_PATH_ENV, str(OFFICIAL)
    )  # a setting that names the file is what runs read
    assert load_ifeval_prompts(limit=5) == prompts[:5]


def test_with_no_setting_the_prompts_are_the_generated_set_labelled_as_such():
    assert os.environ.get(IFEVAL_PATH_ENV) is None  # tests/conftest.py: the default a clone has
    prompts = load_ifeval_prompts(limit=5)
    assert prompts == generated_prompts(size=5)
    source = describe_source(prompts=prompts)
    assert (
        source["kind"] == "generated" and source["label"] == f"{LABEL}, seed 0" and source["n"] == 5
    )
    assert load_ifeval_prompts(source="generated:3", limit=5) != prompts
    assert (
        describe_source(prompts=prompts, source=FIXTURE)["label"]
        == "IFEval prompts from input_data.jsonl"
    )


def test_the_generated_set_is_seeded_prefix_stable_and_covers_every_checker():
    from lm_eval.tasks.ifeval.instructions_registry import INSTRUCTION_DICT

    prompts = generated_prompts(size=541)
    assert generated_prompts(size=20) == prompts[:20]  # "the first N" are the same N everywhere
    assert generated_prompts(size=20, seed=1) != prompts[:20]
    assert [p["key"] for p in prompts[:3]] == [1, 2, 3]
    assert {i for p in prompts for i in p["instruction_id_list"]} == set(INSTRUCTION_DICT)
    assert len({p["prompt"] for p in prompts}) > 500
    assert "less than 1 " not in " ".join(
        p["prompt"] for p in prompts
    )  # nothing no answer can meet


def test_each_generated_instruction_is_the_text_its_checker_rebuilds_from_the_stored_arguments():
    """The scorer rebuilds each checker from kwargs (lm-eval drops empty values); the prompt must
    say exactly what that checker then checks, and no two instructions may be ones the registry
    calls conflicting."""
    from lm_eval.tasks.ifeval.instructions_registry import INSTRUCTION_CONFLICTS, INSTRUCTION_DICT

    for prompt in generated_prompts(size=541):
        ids = prompt["instruction_id_list"]
        assert len(ids) == len(prompt["kwargs"]) and 1 <= len(ids) <= 3
        for a in ids:
            assert not [
                b
                for b in ids
                if b != a
                and (b in INSTRUCTION_CONFLICTS.get(a, ()) or a in INSTRUCTION_CONFLICTS.get(b, ()))
            ], prompt
        for instruction_id, kwargs in zip(ids, prompt["kwargs"], strict=True):
            checker = INSTRUCTION_DICT[instruction_id](instruction_id)
            text = checker.build_description(**{k: v for k, v in kwargs.items() if v})
            assert text in prompt["prompt"], (instruction_id, prompt)


def test_a_generated_prompt_is_scored_by_the_official_checkers():
    prompts = [
        p
        for p in generated_prompts(size=200)
        if p["instruction_id_list"] == ["punctuation:no_comma"]
    ]
    assert prompts
    result = score_responses(
        prompts=prompts[:1] * 2, responses=["hello there friend", "hello, friend"]
    )
    assert [r["prompt_level_strict_acc"] for r in result.rows] == [True, False]


def test_a_missing_configured_file_says_where_it_looked_and_how_to_set_it(tmp_path, monkeypatch):
    monkeypatch.setenv(IFEVAL_PATH_ENV, str(tmp_path / "nowhere" / "input_data.jsonl"))
    with pytest.raises(IFEvalSourceMissing) as raised:
        load_ifeval_prompts()
    assert str(raised.value) == (
        "IFEval prompts not found at "
        f"{tmp_path / 'nowhere' / 'input_data.jsonl'} (from the setting "
        "HARNESS_IFEVAL_PATH); give a JSONL file in the official format (fields key, prompt, "
        "instruction_id_list, kwargs), 'google/IFEval' where `datasets` can load it, or leave "
        "HARNESS_IFEVAL_PATH unset for the project's generated set"
    )
    monkeypatch.setenv(IFEVAL_PATH_ENV, str(FIXTURE))
    assert [p["key"] for p in load_ifeval_prompts()] == [1, 2, 3, 4, 5, 6]


def test_cli_with_no_ifeval_file_is_one_line_and_exit_2(tmp_path):
    missing = tmp_path / "absent.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluation",
            "ifeval",
            "--policy",
            "tiny",
            "--limit",
            "1",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, IFEVAL_PATH_ENV: str(missing)},
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert (
        f"IFEval prompts not found at {missing} (from the setting HARNESS_IFEVAL_PATH)"
        in done.stderr
    )


def test_cli_on_a_clone_with_no_setting_scores_the_generated_set(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != IFEVAL_PATH_ENV}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluation",
            "ifeval",
            "--policy",
            "tiny",
            "--limit",
            "2",
            "--max-new-tokens",
            "4",
            "--no-progress",
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{LABEL}, seed 0 n=2: IFE-P strict")
    saved = json.loads((tmp_path / "out" / "ifeval.json").read_text())
    assert saved["source"]["kind"] == "generated" and saved["n_prompts"] == 2


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
        {
            "key": 1,
            "prompt": "say hi without commas",
            "instruction_id_list": ["punctuation:no_comma"],
            "kwargs": [{}],
        },
        {
            "key": 2,
            "prompt": "say hi in capitals",
            "instruction_id_list": ["change_case:english_capital"],
            "kwargs": [{}],
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run_ifeval(generate=lambda p: "hello there friend", source=path, progress=False)
    assert result.n_prompts == 2 and result.prompt_strict == 0.5
    assert [r["key"] for r in result.rows] == [1, 2]


def test_run_ifeval_resumes_from_saved_responses(tmp_path):
    path = tmp_path / "three.jsonl"
    rows = [
        {
            "key": k,
            "prompt": f"p{k}",
            "instruction_id_list": ["punctuation:no_comma"],
            "kwargs": [{}],
        }
        for k in (1, 2, 3)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    saved = tmp_path / "responses.jsonl"
    saved.write_text(
        json.dumps({"key": 1, "response": "a, b"}) + "\n" + '{"key": 2, "resp'
    )  # killed mid-line
    asked = []
    result = run_ifeval(
        generate=lambda p: asked.append(p) or "no commas here",
        source=path,
        progress=False,
        responses_path=saved,
    )
    assert asked == ["p2", "p3"]
    assert [r["prompt_level_strict_acc"] for r in result.rows] == [False, True, True]
    assert [json.loads(line)["key"] for line in saved.read_text().splitlines()] == [1, 2, 3]


def test_run_ifeval_resumes_a_file_the_self_evaluation_wrote(tmp_path):
    """training.self_eval answers through run_ifeval now; its earlier files named each prompt
    ``id`` (a string) and are resumed, not answered again."""
    prompts = [
        {
            "key": k,
            "prompt": f"p{k}",
            "instruction_id_list": ["punctuation:no_comma"],
            "kwargs": [{}],
        }
        for k in (1, 2)
    ]
    saved = tmp_path / "ifeval.jsonl"
    saved.write_text(json.dumps({"id": "1", "response": "a, b"}) + "\n")
    asked = []
    result = run_ifeval(
        generate=lambda p: asked.append(p) or "no commas here",
        prompts=prompts,
        progress=False,
        responses_path=saved,
    )
    assert asked == ["p2"]
    assert [r["response"] for r in result.rows] == ["a, b", "no commas here"]
    assert result.source["n"] == 2


def test_bad_prompt_file_names_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"key": 1, "prompt": "x", "instruction_id_list": [], "kwargs": []}\n{"key": 2}\n'
    )
    with pytest.raises(ValueError, match=r"bad.jsonl:2: missing field\(s\) prompt"):
        load_ifeval_prompts(source=path)


def test_nltk_data_cli_writes_punkt_tab_that_nltk_reads(tmp_path):
    from evaluation.nltk_data import main as nltk_main

    assert nltk_main(["--dir", str(tmp_path / "nd"), "--quiet"]) == 0
    folder = tmp_path / "nd" / "tokenizers" / "punkt_tab" / "english"
    assert sorted(p.name for p in folder.iterdir()) == [
        "abbrev_types.txt",
        "collocations.tab",
        "ortho_context.tab",
        "sent_starters.txt",
    ]
    import nltk
    from nltk.tokenize.punkt import PunktSentenceTokenizer, load_punkt_params

    from evaluation.nltk_data import ensure_nltk_data

    ensure_nltk_data(root=tmp_path / "nd")  # NLTK only opens files under its data path
    pointer = nltk.data.find("tokenizers/punkt_tab/english/")
    assert str(pointer.path).startswith(str(tmp_path / "nd"))
    tokenizer = PunktSentenceTokenizer(load_punkt_params(pointer))
    assert tokenizer.tokenize("Dr. Li sells tea at 5 p.m. on Monday. It sells out.") == [
        "Dr. Li sells tea at 5 p.m. on Monday.",
        "It sells out.",
    ]
