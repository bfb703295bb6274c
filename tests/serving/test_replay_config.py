"""One replay config (serving.replay_config.ReplayConfig): the CLI's flags and the studio's form are
built from it, with the same defaults, help texts and ranges."""

from __future__ import annotations

import dataclasses

import pytest

from harness.config_schema import from_flags
from serving.__main__ import build_parser, main
from serving.replay_config import ReplayConfig


def test_every_field_is_a_flag_with_its_help_and_default():
    parser = build_parser()
    replay = parser._subparsers._group_actions[0].choices["replay"]
    flags = {action.dest: action for action in replay._actions}
    for f in dataclasses.fields(ReplayConfig):
        assert f.name in flags and f.metadata["help"] in flags[f.name].help
    args = parser.parse_args(
        ["replay", "--cases", "/x.jsonl", "--concurrency", "1,3", "--top-p", "0.5"]
    )
    assert from_flags(ReplayConfig, args) == ReplayConfig(
        cases="/x.jsonl", concurrency=[1, 3], top_p=0.5
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cases", "/x.jsonl", "--warmup", "-1"], "warmup: must be between 0 and 10000, got -1"),
        (
            ["--cases", "/x.jsonl", "--concurrency", "0,2"],
            "concurrency: give levels between 1 and 256, e.g. 1,2,4,8",
        ),
        (
            ["--cases", "/x.jsonl", "--sla", "0"],
            "sla: must be above 0 and at most 3600 seconds, got 0",
        ),
        ([], "cases: give a replay case file (JSONL or a JSON list)"),
    ],
)
def test_the_cli_refuses_what_the_studio_form_refuses_with_the_same_message(argv, message, capsys):
    from studio.training.configs import RunForm

    assert main(["replay", *argv]) == 2
    assert capsys.readouterr().err.strip() == f"error: {message}"
    posted = {
        flag.removeprefix("--").replace("-", "_"): value
        for flag, value in zip(argv[::2], argv[1::2], strict=True)
    }
    form = RunForm("replay", posted)
    assert not form.is_valid() and message in form.problems.values()
