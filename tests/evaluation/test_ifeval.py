"""IFEval: the official lm-eval checkers, run offline, give the expected verdicts."""

import json
from pathlib import Path

import pytest

from evaluation.ifeval import check_response, load_ifeval_prompts, run_ifeval, score_responses

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


def test_default_prompts_are_the_541_official_ones():
    prompts = load_ifeval_prompts()
    assert len(prompts) == 541
    assert load_ifeval_prompts(limit=5) == prompts[:5]


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
