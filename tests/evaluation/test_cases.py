"""The case format: valid files load, bad lines are named by number, nothing is half-imported."""

from pathlib import Path

import pytest

from evaluation.cases import CaseFileError, case_request, import_cases, load_cases, parse_cases

TESTDATA = Path(__file__).parent / "testdata"


def test_valid_file_loads_and_builds_runtime_requests():
    cases = load_cases(TESTDATA / "cases_valid.jsonl")
    assert [c["id"] for c in cases] == ["price-1", "spam-1"]
    request = case_request(cases[0])
    assert request.text == "How much is product #3?"
    assert request.room.current_link_id == 1 and request.intent == "product_qa"


def test_bad_file_lists_every_bad_line_and_field():
    with pytest.raises(CaseFileError) as info:
        load_cases(TESTDATA / "cases_bad.jsonl")
    text = str(info.value)
    assert "nothing was imported" in text
    assert "cases_bad.jsonl:2: category: must be one of product_qa" in text
    assert "cases_bad.jsonl:3: <line>: not valid JSON" in text
    assert "cases_bad.jsonl:4: id: duplicate id 'ok-1' (first on line 1)" in text
    assert (
        "cases_bad.jsonl:4: gold.route: must be one of public, private, silent, got 'loud'" in text
    )
    assert "cases_bad.jsonl:4: gold.rubrics[0]" in text
    assert "cases_bad.jsonl:5: format: must be 'hs-case/1'" in text
    assert "cases_bad.jsonl:5: candidates[0].human.accuracy: must be 0 or 1, got 2" in text
    assert "cases_bad.jsonl:5: candidates[0].human.effectiveness" in text
    assert "cases_bad.jsonl:5: comments: must hold at least one comment" in text
    lines = {p.line for p in info.value.problems}
    assert 1 not in lines


def test_import_writes_nothing_when_any_line_is_bad(tmp_path):
    dest = tmp_path / "imported.jsonl"
    with pytest.raises(CaseFileError):
        import_cases(source=TESTDATA / "cases_bad.jsonl", dest=dest)
    assert not dest.exists()
    assert import_cases(source=TESTDATA / "cases_valid.jsonl", dest=dest) == 2
    assert [c["id"] for c in load_cases(dest)] == ["price-1", "spam-1"]


def test_empty_file_is_rejected():
    with pytest.raises(CaseFileError, match="holds no cases"):
        parse_cases(["", "  "], source="empty.jsonl")


def test_invalid_regex_in_forbidden_claim_is_named():
    line = (
        '{"format":"hs-case/1","id":"x","category":"chitchat","comments":["hi"],'
        '"gold":{"route":"public","forbidden_claims":[{"id":"f","text":"t","patterns":["(unclosed"]}]}}'
    )
    with pytest.raises(
        CaseFileError, match=r"x.jsonl:1: gold.forbidden_claims\[0\].patterns\[0\]: not a valid"
    ):
        parse_cases([line], source="x.jsonl")
