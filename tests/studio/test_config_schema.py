"""One schema per config (harness/config_schema.py): every field of every run config is a ``python
-m`` flag and an input of the studio's form, both read the same text to the same value, and what a
value names is checked by its field's kind in one place (studio/training/configs.KIND_CHECKS),
whatever the field is called."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from harness.config_schema import KINDS, fields_of, from_flags, value_text
from studio.training.configs import (
    CONFIG_CLASSES,
    KIND_CHECKS,
    PIPELINE_OWNED,
    STUDIO_OWNED,
    RunForm,
    value_problem,
)

#: The command each studio run kind's config is the flags of.
COMMANDS = {
    "sft": "sft",
    "opd": "opd",
    "rl": "rl",
    "mtp": "mtp",
    "pipeline": "pipeline",
    "ablation": "ablation",
    "eval": "eval",
    "replay": "replay",
}


def _subparser(kind: str) -> argparse.ArgumentParser:
    if kind == "replay":
        from serving.__main__ import build_parser
    else:
        from training.cli import build_parser
    return build_parser()._subparsers._group_actions[0].choices[COMMANDS[kind]]


def _form_inputs(form: RunForm) -> set[str]:
    return {name for name in form.fields if name != "title"}


@pytest.mark.parametrize("kind", sorted(CONFIG_CLASSES))
def test_every_config_field_is_a_cli_flag_and_a_form_input_and_nothing_else_is(kind):
    cls = CONFIG_CLASSES[kind]
    flags = {}
    for action in _subparser(
        kind
    )._actions:  # the field's own flag (eval's --no-ifeval-base shares its dest)
        flags.setdefault(action.dest, action)
    expected_inputs = set()
    for field in fields_of(cls):
        if (
            field.section is not None
        ):  # a pipeline's stage section: its fields are inputs named sft.max_steps
            expected_inputs |= {
                f"{field.name}.{f.name}"
                for f in fields_of(field.section)
                if f.name not in PIPELINE_OWNED
            }
            continue
        assert field.name in flags, f"{cls.__name__}.{field.name} has no {field.flag} flag"
        assert field.help and field.help in flags[field.name].help
        assert field.flag in flags[field.name].option_strings
        if field.name not in STUDIO_OWNED:
            expected_inputs.add(field.name)
    form = RunForm(kind)
    assert _form_inputs(form) == expected_inputs
    for name in expected_inputs:
        assert form.fields[name].help_text and form.fields[name].help_text in " ".join(
            f.help
            for f in fields_of(cls)
            + [g for f in fields_of(cls) if f.section for g in fields_of(f.section)]
        )


@pytest.mark.parametrize("kind", sorted(CONFIG_CLASSES))
def test_every_value_as_the_form_shows_it_reads_back_to_itself_in_the_form_and_as_flags(
    kind, tmp_path
):
    """What a user submits untouched is what the form showed, and the same texts as flags give the
    same config."""
    cls = CONFIG_CLASSES[kind]
    (tmp_path / "cases.jsonl").write_text("")
    shown = (
        cls() if kind != "replay" else cls(cases=str(tmp_path / "cases.jsonl"))
    )  # a replay needs its cases
    form = RunForm(kind, base=shown)
    posted = {name: field.initial for name, field in form.fields.items() if name != "title"}
    bound = RunForm(kind, posted)
    assert bound.is_valid(), bound.problems
    for name in posted:
        field = bound.fields[name]
        value = getattr(
            getattr(shown, field.section) if field.section else shown, field.schema.name
        )
        assert bound.cleaned_data.get(name) == value, (name, bound.errors.get(name))
    args = argparse.Namespace(
        **{
            f.name: value_text(getattr(shown, f.name), separator=",")
            for f in fields_of(cls)
            if f.section is None
        }
    )
    assert from_flags(cls, args) == shown


def test_a_posted_text_and_the_same_flag_give_the_same_config():
    from training.cli import _build, build_parser

    typed = {
        "max_steps": "7",
        "learning_rate": "3e-5",
        "hsa_dims": ["", "skills", "tools"],
        "report_to": ["", "none"],
        "pack_turns": "false",
        "model": "tiny",
    }
    form = RunForm("sft", typed)
    assert form.is_valid(), form.problems
    args = build_parser().parse_args(
        [
            "sft",
            "--max-steps",
            "7",
            "--learning-rate",
            "3e-5",
            "--hsa-dims",
            "skills,tools",
            "--report-to",
            "none",
            "--pack-turns",
            "false",
            "--model",
            "tiny",
        ]
    )
    assert form.config == _build(type(form.config), args)


def test_a_field_kind_that_no_check_knows_is_refused_where_the_dataclass_is_read():
    assert set(KIND_CHECKS) == set(KINDS)

    @dataclasses.dataclass
    class Wrong:
        model: str = dataclasses.field(
            default="local", metadata={"kind": "checkpiont", "help": "x"}
        )

    with pytest.raises(
        TypeError, match="Wrong.model: kind 'checkpiont' is not one of checkpoint, teacher"
    ):
        fields_of(Wrong)


def _field(kind: str, name: str):
    return next(f for f in fields_of(CONFIG_CLASSES[kind]) if f.name == name)


@pytest.mark.parametrize(
    ("kind", "name", "value", "message"),
    [
        # checkpoint: local, tiny, an alias of the field, or an existing absolute checkpoint folder
        ("sft", "model", "tiny", ""),
        (
            "sft",
            "model",
            "base",
            "model: 'base' is not a model: use local, tiny or the absolute path",
        ),
        ("opd", "teacher", "base", ""),
        ("eval", "model", "/no/such/folder", "model: /no/such/folder does not exist"),
        ("ablation", "checkpoints", {"hsa_sft": "x"}, "checkpoints.hsa_sft: 'x' is not a model"),
        # teacher: gold or an OpenAI-compatible endpoint
        ("sft", "teacher", "gold", ""),
        ("sft", "teacher", "openai:http://127.0.0.1:30000/v1:policy", ""),
        (
            "sft",
            "teacher",
            "tiny",
            "teacher: 'tiny': use 'gold' (the cases' gold trajectories) or openai:BASE_URL:MODEL",
        ),
        # harness: the demo or a stored version (a database read, not needed for these)
        ("replay", "harness", "demo", ""),
        # file: empty keeps the default; else an absolute path of an existing file
        ("rl", "cases", "", ""),
        (
            "mtp",
            "cases",
            "cases.jsonl",
            "cases: give an absolute path on the workers, not 'cases.jsonl'",
        ),
        ("sft", "examples", "/etc", "examples: /etc is not an existing file"),
        # prompts: builtin, a hub name or an existing path
        ("opd", "prompts", "allenai/tulu-3-sft-mixture", ""),
        (
            "opd",
            "prompts",
            "../prompts",
            "prompts: '../prompts': use 'builtin', an existing absolute file or folder",
        ),
        # route: a serving profile or local:/transformers: with a checkpoint
        ("replay", "route", "cpu-engine", ""),
        ("replay", "route", "local:relative", "route: 'relative' is not a model"),
        ("replay", "route", "nowhere", "route: 'nowhere' is not a route: use one of"),
        # draft-head: empty (a new head) or an absolute draft-head folder
        ("mtp", "init_head", "", ""),
        ("mtp", "init_head", "heads/x", "init_head: give the absolute path of a draft-head folder"),
    ],
)
def test_each_kind_is_checked_in_one_place_whatever_the_field_is_called(kind, name, value, message):
    problem = value_problem(_field(kind, name), value, name=name)
    assert problem.startswith(message) if message else problem == ""


@pytest.mark.django_db
def test_a_harness_field_takes_a_stored_version_and_names_what_it_takes_otherwise(demo_version):
    field = _field("eval", "harness")
    assert value_problem(field, "livestream-avatar@v1", name="harness") == ""
    assert value_problem(field, "livestream-avatar@v7", name="harness") == (
        "harness: 'livestream-avatar@v7' is not a Harness "
        "here: use 'demo' or a studio version as NAME@vN, "
        "e.g. livestream-avatar@v1"
    )


@pytest.mark.parametrize(
    ("kind", "posted", "field", "message"),
    [
        (
            "sft",
            {"report_to": ["", "comet"]},
            "report_to",
            "report_to: comet is not one of none, tensorboard, mlflow",
        ),
        (
            "pipeline",
            {"stages": ["", "sft", "dpo"]},
            "stages",
            "stages: dpo is not one of sft, opd, rl",
        ),
        (
            "pipeline",
            {"rl.hsa_dims": ["", "nothing"]},
            "rl.hsa_dims",
            "rl.hsa_dims: nothing is not one of skills",
        ),
        ("eval", {"sets": ["", "mmlu"]}, "sets", "sets: mmlu is not one of live_qa, variant_qa"),
    ],
)
def test_a_choice_outside_the_fields_choices_is_refused_naming_the_valid_ones(
    kind, posted, field, message
):
    form = RunForm(kind, posted)
    assert not form.is_valid()
    assert form.problems[field].startswith(message)


def test_the_cli_takes_a_tracker_the_form_does_not_offer():
    """The command line passes report_to on to transformers (any tracker it knows); the studio
    offers its own."""
    from training.cli import _build, build_parser
    from training.sft_config import SFTStageConfig

    assert _build(
        SFTStageConfig, build_parser().parse_args(["sft", "--report-to", "comet_ml"])
    ).report_to == ["comet_ml"]


@pytest.mark.parametrize("kind", sorted(CONFIG_CLASSES))
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_the_one_config_writer_writes_what_load_config_reads_back(kind, suffix, tmp_path):
    """``config_text`` / ``dump_config`` write every run config, the studio's run files (YAML) and a
    run's resolved config (JSON) alike; each reads back to the same config."""
    from harness.config_schema import config_text, dump_config, load_config

    (tmp_path / "cases.jsonl").write_text("")
    cls = CONFIG_CLASSES[kind]
    config = cls() if kind != "replay" else cls(cases=str(tmp_path / "cases.jsonl"))
    dump_config(config, tmp_path / f"run{suffix}")
    assert (tmp_path / f"run{suffix}").read_text(encoding="utf-8") == config_text(
        config, suffix=suffix
    )
    assert load_config(cls, tmp_path / f"run{suffix}") == config


def test_a_config_file_of_another_format_is_refused_naming_the_formats(tmp_path):
    from harness.config_schema import dump_config
    from training.sft_config import SFTStageConfig

    with pytest.raises(ValueError, match=r"ends in \.yaml, \.yml, \.json, not '\.toml'"):
        dump_config(SFTStageConfig(), tmp_path / "run.toml")
    assert not (tmp_path / "run.toml").exists()
