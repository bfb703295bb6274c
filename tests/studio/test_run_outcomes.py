"""The one-line outcome of a finished run says what it trained, counted right (issue 29, item 9)."""

from studio.training.job_kinds import run_outcome


def test_steps_are_counted_in_words_and_a_pipeline_names_its_last_stage():
    card = {"steps": 1, "stage": "rl"}
    assert run_outcome({"kind": "sft", "summary": {"model_card": card}}) == "trained 1 step (rl): model in final/"
    assert run_outcome({"kind": "pipeline", "summary": {"model_card": card}}) == (
        "pipeline finished; its last stage (rl) trained 1 step: model in final/")
    assert run_outcome({"kind": "sft", "summary": {"model_card": {"steps": 4, "stage": "sft"}}}).startswith(
        "trained 4 steps (sft)")
