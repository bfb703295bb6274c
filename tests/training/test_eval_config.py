"""One evaluation config (training.eval_config.EvalConfig): python -m training eval's flags and the
studio's evaluation form are built from it, with the same defaults, help texts and ranges."""

from __future__ import annotations

import dataclasses

import pytest

from training.cli import build_parser, main
from training.eval_config import EvalConfig


def test_every_field_is_a_flag_with_its_help_and_the_studio_runs_the_same_flags(tmp_path):
    parser = build_parser()
    flags = {
        action.dest: action
        for action in parser._subparsers._group_actions[0].choices["eval"]._actions
        if action.option_strings[0] != "--no-ifeval-base"
    }
    for f in dataclasses.fields(EvalConfig):
        assert f.name in flags and f.metadata["help"] in flags[f.name].help
    config = EvalConfig(model="local", sets=["live_qa", "ifeval"], cases=7, ifeval_base=False)
    argv = config.argv(out=str(tmp_path))
    assert argv[:2] == ["training", "eval"]
    args = parser.parse_args(argv[1:])
    from training.cli import _build

    assert _build(EvalConfig, args) == config and args.out == str(tmp_path)
    assert (
        _build(
            EvalConfig, parser.parse_args(["eval", "--out", "x", "--no-ifeval-base"])
        ).ifeval_base
        is False
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cases", "0"], "cases: must be between 1 and 10000, got 0"),
        (["--ifeval", "10001"], "ifeval: must be between 1 and 10000, got 10001"),
    ],
)
def test_the_cli_refuses_what_the_studio_form_refuses_with_the_same_message(
    tmp_path, argv, message, capsys
):
    from studio.training.configs import RunForm

    assert main(["eval", "--out", str(tmp_path / "eval"), *argv]) == 2
    assert capsys.readouterr().err.strip() == f"error: {message}"
    assert not (tmp_path / "eval").exists()
    posted = {
        flag.removeprefix("--"): value for flag, value in zip(argv[::2], argv[1::2], strict=True)
    }
    form = RunForm("eval", posted)
    assert not form.is_valid() and message in form.problems.values()


def test_an_unknown_set_is_refused_before_anything_is_scored(tmp_path, capsys):
    assert main(["eval", "--out", str(tmp_path / "eval"), "--sets", "live_qa,t9"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: sets: choose one or more of live_qa, variant_qa, prompt_robustness, ifeval (not t9)"
    )
