"""One replay config (serving.replay_config.ReplayConfig): the CLI's flags and the studio's form are
built from it, with the same defaults, help texts and ranges."""

from __future__ import annotations

import dataclasses
import json

import pytest

from harness.config_schema import from_flags
from serving.__main__ import build_parser, main
from serving.replay_config import ReplayConfig
from tests.cli import call


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
        (
            ["--cases", "/x.jsonl", "--run-id", "../elsewhere"],
            "run_id: '../elsewhere' is not a folder name: use up to 128 letters, digits, '.', '_' "
            "and '-', starting with a letter or digit",
        ),
        (
            ["--cases", "/x.jsonl", "--post", "studio:8000/staging"],
            "post: give the deployment's trajectories URL, e.g. "
            "http://studio:8000/api/v1/deployments/shop-eu/trajectories/",
        ),
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


def _cases(tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "".join(
            json.dumps({"id": f"case-{i}", "request": {"comments": [f"How much is link {i + 1}?"]}})
            + "\n"
            for i in range(2)
        )
    )
    return cases


def test_the_cli_takes_the_seed_and_the_run_folders_name_from_the_config(fake_openai, tmp_path):
    """``--seed`` and ``--run-id`` are ReplayConfig fields (the studio's form has them too): the
    seed reaches every model call and the run record, the run id names the folder."""
    fake_openai.models = ["fake-policy"]
    done = call(
        "serving",
        "replay",
        "--route",
        f"sglang:{fake_openai.url}:fake-policy",
        "--cases",
        str(_cases(tmp_path)),
        "--concurrency",
        "1",
        "--warmup",
        "0",
        "--measured",
        "2",
        "--seed",
        "7",
        "--run-id",
        "seeded",
        "--out",
        str(tmp_path / "runs"),
    )
    assert done.returncode == 0, done.stderr
    meta = json.loads((tmp_path / "runs" / "seeded" / "run.json").read_text())
    assert meta["run_id"] == "seeded" and meta["generation"]["seed"] == 7
    chats = [b for b in fake_openai.bodies if isinstance(b, dict) and "messages" in b]
    assert chats and {b.get("seed") for b in chats} == {7}


def test_the_cli_posts_where_the_configs_post_field_says(tmp_path, monkeypatch):
    """``--post`` is the config's ``post``: without the deployment's token the CLI stops before the
    run, naming the variable."""
    monkeypatch.delenv("HARNESS_TRAFFIC_TOKEN", raising=False)
    done = call(
        "serving",
        "replay",
        "--cases",
        str(_cases(tmp_path)),
        "--post",
        "http://127.0.0.1:9/api/v1/deployments/staging/trajectories/",
        "--out",
        str(tmp_path / "runs"),
    )
    assert done.returncode == 2 and "$HARNESS_TRAFFIC_TOKEN is not set" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_a_seed_that_is_no_number_is_named_by_the_cli_and_the_form():
    from studio.training.configs import RunForm

    done = call("serving", "replay", "--cases", "/x.jsonl", "--seed", "abc")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: --seed: expected an integer, got 'abc' (or leave it empty for none)"
    )
    form = RunForm("replay", {"cases": "/x.jsonl", "seed": "abc"})
    assert not form.is_valid()
    assert (
        form.problems["seed"] == "seed: expected an integer, got 'abc' (or leave it empty for none)"
    )


def test_an_empty_seed_is_none_and_the_empty_fields_stay_off_the_command_line():
    config = ReplayConfig(cases="/x.jsonl")
    assert config.seed is None and config.argv(out="/runs")[-2:] == ["--out", "/runs"]
    argv = ReplayConfig(cases="/x.jsonl", seed=3, run_id="r1", post="").argv(out="/runs")
    assert argv[argv.index("--seed") + 1] == "3" and argv[argv.index("--run-id") + 1] == "r1"
    assert "--post" not in argv
    args = build_parser().parse_args(["replay", "--cases", "/x.jsonl", "--seed", ""])
    assert from_flags(ReplayConfig, args).seed is None
