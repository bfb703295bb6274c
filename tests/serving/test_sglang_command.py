"""The SGLang launch command: every flag SGLang 0.5.x accepts, the report's speculative settings."""

import json
import shlex
from pathlib import Path

import pytest

from serving import sglang
from serving.__main__ import main
from serving.sglang import SGLangCommandError, SGLangLaunch, flag_names, sglang_launch_argv

FIXTURE = json.loads(
    (Path(__file__).parent / "testdata" / "sglang_0_5_server_args.json").read_text()
)
KNOWN_FLAGS = set(FIXTURE["flags"])
STORE_TRUE = set(FIXTURE["store_true"])
QWEN36 = "/models/Qwen3.6-35B-A3B-hat"
DRAFT = "/models/Qwen3.6-35B-A3B-hat-mtp"


def _flag_values(argv):
    """{flag: value or True} from an argv list, checking each flag's arity."""
    values, i = {}, 3  # skip: python -m sglang.launch_server
    assert argv[:3] == ["python", "-m", "sglang.launch_server"]
    while i < len(argv):
        flag = argv[i]
        assert flag.startswith("--"), f"expected a flag at position {i}, got {flag!r}"
        if flag in STORE_TRUE:
            values[flag] = True
            i += 1
        else:
            assert i + 1 < len(argv) and not argv[i + 1].startswith("--"), f"{flag} lacks a value"
            values[flag] = argv[i + 1]
            i += 2
    return values


@pytest.mark.parametrize("draft_head", [None, DRAFT], ids=["builtin-mtp", "adapted-draft-head"])
def test_every_generated_flag_is_an_sglang_0_5_flag(draft_head):
    argv = sglang_launch_argv(
        SGLangLaunch(
            model_path=QWEN36,
            draft_head=draft_head,
            trust_remote_code=True,
            mem_fraction_static=0.85,
            context_length=32768,
        )
    )
    unknown = [f for f in flag_names(argv) if f not in KNOWN_FLAGS]
    assert unknown == []
    values = _flag_values(argv)
    for flag, allowed in FIXTURE["choices"].items():
        if flag in values:
            assert values[flag] in allowed, (flag, values[flag])


def test_qwen36_command_carries_the_reports_serving_setup():
    values = _flag_values(sglang_launch_argv(SGLangLaunch(model_path=QWEN36)))
    assert values["--model-path"] == QWEN36
    assert values["--dtype"] == "bfloat16"
    assert values["--tool-call-parser"] == "qwen3_coder"
    assert values["--reasoning-parser"] == "qwen3"
    assert values["--tp-size"] == "1"
    assert values["--speculative-algorithm"] == "NEXTN"
    assert values["--speculative-num-steps"] == "3"
    assert values["--speculative-eagle-topk"] == "1"
    assert values["--speculative-num-draft-tokens"] == "4"
    assert "--speculative-draft-model-path" not in values


def test_draft_head_path_is_passed_only_when_given():
    values = _flag_values(sglang_launch_argv(SGLangLaunch(model_path=QWEN36, draft_head=DRAFT)))
    assert values["--speculative-draft-model-path"] == DRAFT
    no_spec = _flag_values(
        sglang_launch_argv(SGLangLaunch(model_path=QWEN36, speculative_algorithm=None))
    )
    assert not any(f.startswith("--speculative") for f in no_spec)


def test_the_generators_choices_are_ones_sglang_accepts():
    assert set(sglang.SGLANG_DTYPES) <= set(FIXTURE["choices"]["--dtype"])
    assert set(sglang.SPECULATIVE_ALGORITHMS) <= set(FIXTURE["choices"]["--speculative-algorithm"])
    assert set(sglang.REASONING_PARSERS) <= set(FIXTURE["choices"]["--reasoning-parser"])
    assert set(sglang.TOOL_CALL_PARSERS) <= set(FIXTURE["choices"]["--tool-call-parser"])


def test_bad_settings_are_all_reported_with_what_is_valid():
    launch = SGLangLaunch(
        model_path=QWEN36,
        dtype="bf17",
        tool_call_parser="hermes",
        reasoning_parser="r1",
        speculative_num_draft_tokens=8,
        port=70000,
    )
    with pytest.raises(SGLangCommandError) as info:
        sglang_launch_argv(launch)
    problems = info.value.problems
    assert len(problems) == 5
    text = str(info.value)
    assert "dtype: 'bf17'" in text and "bfloat16" in text
    assert "tool_call_parser: 'hermes'" in text and "qwen3_coder" in text
    assert "reasoning_parser: 'r1'" in text
    assert "speculative_num_draft_tokens" in text and "= 4" in text
    assert "port: 70000" in text


def test_check_paths_requires_the_folders_on_this_host(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    launch = SGLangLaunch(model_path=str(model), draft_head=str(tmp_path / "missing-head"))
    with pytest.raises(SGLangCommandError, match="draft_head: .*missing-head is not a folder"):
        sglang_launch_argv(launch, check_paths=True)
    assert sglang_launch_argv(launch)  # without the check the command is for another host


def test_cli_prints_a_shell_line_equal_to_the_argv(capsys):
    assert main(["sglang-command", "--model", QWEN36, "--draft-head", DRAFT]) == 0
    line = capsys.readouterr().out.strip()
    assert shlex.split(line) == sglang_launch_argv(
        SGLangLaunch(model_path=QWEN36, draft_head=DRAFT)
    )
    assert main(["sglang-command", "--model", QWEN36, "--json"]) == 0
    argv = json.loads(capsys.readouterr().out)
    assert all(f in KNOWN_FLAGS for f in flag_names(argv))


def test_cli_rejects_bad_values_with_exit_code_2(capsys):
    assert main(["sglang-command", "--model", QWEN36, "--reasoning-parser", "nope"]) == 2
    assert "reasoning_parser: 'nope'" in capsys.readouterr().err


def test_cli_takes_model_and_draft_head_from_the_builtin_sglang_profile(capsys):
    assert main(["sglang-command", "--profile", "gpu-sglang", "--json"]) == 0
    values = _flag_values(json.loads(capsys.readouterr().out))
    assert values["--model-path"] == "/models/policy"
    assert values["--speculative-draft-model-path"] == "/models/policy-mtp-head"
    assert values["--served-model-name"] == "policy"
    assert values["--port"] == "30000"


def test_a_smollm2_checkpoint_with_no_head_gets_no_nextn_and_no_qwen_parsers(capsys):
    """SmolLM2 (LlamaForCausalLM, a ChatML template without tools or thinking): no MTP layers, so no
    speculative decoding, and no parser of another model family."""
    from harness.model_cache import tiny_model_dir

    assert main(["sglang-command", "--model", str(tiny_model_dir()), "--json"]) == 0
    out, err = capsys.readouterr()
    flags = flag_names(json.loads(out))
    assert not [f for f in flags if f.startswith("--speculative") or f.endswith("-parser")], flags
    assert (
        "# LlamaForCausalLM has no MTP layers and no draft head was given: no speculative decoding"
        in err
    )
    assert "no --tool-call-parser" in err and "no --reasoning-parser" in err


def test_a_qwen3_next_checkpoint_gets_nextn_and_the_parsers_its_template_uses(tmp_path, capsys):
    model = tmp_path / "qwen3-next"
    model.mkdir()
    (model / "config.json").write_text(
        json.dumps({"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next"})
    )
    (model / "model.safetensors.index.json").write_text("{}")  # its weights, sharded
    (model / "chat_template.jinja").write_text("{{ '<think>' }}{{ '<tool_call>\\n<function=' }}")
    assert main(["sglang-command", "--model", str(model), "--json"]) == 0
    values = _flag_values(json.loads(capsys.readouterr().out))
    assert values["--speculative-algorithm"] == "NEXTN"
    assert values["--tool-call-parser"] == "qwen3_coder" and values["--reasoning-parser"] == "qwen3"
    (model / "chat_template.jinja").write_text(
        "{{ '<tool_call>' }}"
    )  # Hermes-style JSON calls, no thinking
    assert (
        main(["sglang-command", "--model", str(model), "--json", "--reasoning-parser", "none"]) == 0
    )
    values = _flag_values(json.loads(capsys.readouterr().out))
    assert values["--tool-call-parser"] == "qwen25" and "--reasoning-parser" not in values
