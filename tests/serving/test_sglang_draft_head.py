"""An adapted draft head for SGLang: tensor names and shapes as SGLang 0.5.x loads them, the launch
flags its layout needs, and a stale or broken head refused with the file and the fix.

``testdata/sglang_draft_params.json`` writes down what SGLang's loaders read for each layout
(``LlamaForCausalLMEagle`` for eagle, the ``mtp.*`` checkpoint names for nextn); the test applies
SGLang's own loading rules (the ``model.`` prefix, the q/k/v and gate/up stacking) to the file
this project saves.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from harness.model_cache import tiny_model_dir
from serving.__main__ import main
from serving.engine.draft_head import DraftHead, head_tensors
from serving.engine.policy import load_model

FIXTURE = json.loads((Path(__file__).parent / "testdata" / "sglang_draft_params.json").read_text())


@pytest.fixture(scope="module")
def tiny():
    return load_model(tiny_model_dir())


def _dims(config) -> dict[str, int]:
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return {
        "hidden": config.hidden_size,
        "intermediate": config.intermediate_size,
        "heads": config.num_attention_heads,
        "kv_heads": config.num_key_value_heads,
        "head_dim": head_dim,
        "vocab": config.vocab_size,
    }


def _shape(formula: list[str], dims: dict[str, int]) -> tuple[int, ...]:
    return tuple(int(eval(term, {"__builtins__": {}}, dict(dims))) for term in formula)  # noqa: S307 - fixture text


def _head(tiny, tmp_path, layout: str, card: dict | None = None) -> Path:
    model, _ = tiny
    torch.manual_seed(0)
    from harness.checkpoints import checkpoint_info

    card = (
        card
        if card is not None
        else {
            "policy": str(tiny_model_dir()),
            "policy_fingerprint": checkpoint_info(tiny_model_dir())["fingerprint"],
        }
    )
    return DraftHead.for_policy(model, layout=layout).save(
        tmp_path / f"head-{layout}", policy_config=model.config, card=card
    )


def test_eagle_head_is_what_sglang_llama_eagle_loads(tiny, tmp_path):
    model, _ = tiny
    spec = FIXTURE["eagle"]
    dims = _dims(model.config)
    head = _head(tiny, tmp_path, "eagle")
    tensors = head_tensors(head)
    # SGLang's loading: prefix, then stacking of the shards into fused parameters
    fused: dict[str, dict] = {}
    for name, shape in tensors.items():
        assert "lm_head" not in name and "embed_tokens" not in name  # both come from the target
        target = "model." + name
        for param, shard, shard_id in spec["stacked_params_mapping"]:
            if shard in target:
                target = target.replace(shard, param)
                fused.setdefault(target, {})[shard_id] = shape
                break
        else:
            fused[target] = {None: shape}
    wanted = {name: _shape(formula, dims) for name, formula in spec["params"].items()}
    loaded = set(wanted) - set(spec["set_from_target"])
    assert set(fused) == loaded
    for name, shards in fused.items():
        if None in shards:
            assert shards[None] == wanted[name], name
        else:
            order = spec["shard_order"][name.split(".")[-2]]
            rows = sum(shards[s][0] for s in order)
            assert (rows, shards[order[0]][1]) == wanted[name], name
    config = json.loads((head / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLMEagle"] and config["num_hidden_layers"] == 1
    assert config["hidden_size"] == dims["hidden"] and config["vocab_size"] == dims["vocab"]


def test_nextn_head_uses_the_mtp_checkpoint_names(tiny, tmp_path):
    model, _ = tiny
    spec = FIXTURE["nextn"]
    dims = _dims(model.config)
    tensors = head_tensors(_head(tiny, tmp_path, "nextn"))
    assert tensors == {
        name: _shape(formula, dims) for name, formula in spec["checkpoint_names"].items()
    }
    assert not set(spec["qwen_only"]) & set(tensors)


def _flags(argv: list[str]) -> dict[str, str]:
    return {
        argv[i]: argv[i + 1]
        for i in range(len(argv) - 1)
        if argv[i].startswith("--") and not argv[i + 1].startswith("--")
    }


def test_sglang_command_picks_eagle_for_a_llama_head_with_the_report_settings(
    tiny, tmp_path, capsys
):
    head = _head(tiny, tmp_path, "eagle")
    assert (
        main(
            [
                "sglang-command",
                "--model",
                str(tiny_model_dir()),
                "--draft-head",
                str(head),
                "--json",
            ]
        )
        == 0
    )
    flags = _flags(json.loads(capsys.readouterr().out))
    assert flags["--speculative-algorithm"] == "EAGLE"
    assert flags["--speculative-num-steps"] == "3" and flags["--speculative-eagle-topk"] == "1"
    assert flags["--speculative-num-draft-tokens"] == "4"
    assert flags["--speculative-draft-model-path"] == str(head)


def test_a_nextn_head_for_a_llama_policy_is_refused_with_the_fix(tiny, tmp_path, capsys):
    head = _head(tiny, tmp_path, "nextn")
    assert (
        main(["sglang-command", "--model", str(tiny_model_dir()), "--draft-head", str(head)]) == 2
    )
    err = capsys.readouterr().err
    assert "harness_draft.layout: nextn" in err and "--layout eagle" in err


def test_a_stale_head_is_refused_naming_its_card_and_how_to_re_adapt(tiny, tmp_path, capsys):
    head = _head(
        tiny, tmp_path, "eagle", card={"policy": "/models/base", "policy_fingerprint": "ab" * 32}
    )
    assert (
        main(["sglang-command", "--model", str(tiny_model_dir()), "--draft-head", str(head)]) == 2
    )
    err = capsys.readouterr().err
    assert "card.json: policy_fingerprint: the head was adapted to /models/base" in err
    assert "stale" in err and "python -m training mtp --model" in err and "--init-head" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "damage", ["missing-tensor", "wrong-shape", "no-config", "not-safetensors"]
)
def test_a_broken_head_is_refused_naming_the_file_and_tensor(tiny, tmp_path, capsys, damage):
    head = _head(tiny, tmp_path, "eagle")
    weights = head / "model.safetensors"
    if damage == "missing-tensor":
        state = load_file(str(weights))
        del state["layers.0.mlp.down_proj.weight"]
        save_file(state, str(weights))
        expect = "layers.0.mlp.down_proj.weight: missing"
    elif damage == "wrong-shape":
        state = load_file(str(weights))
        state["fc.weight"] = state["fc.weight"][:, :-1].contiguous()
        save_file(state, str(weights))
        expect = "fc.weight: shape"
    elif damage == "no-config":
        (head / "config.json").unlink()
        expect = "no config.json"
    else:
        weights.write_bytes(b"not a safetensors file")
        expect = "not a safetensors file"
    assert (
        main(["sglang-command", "--model", str(tiny_model_dir()), "--draft-head", str(head)]) == 2
    )
    err = capsys.readouterr().err
    assert expect in err and "Traceback" not in err


def test_a_head_with_a_draft_vocabulary_passes_its_token_map(tiny, tmp_path, capsys):
    from serving.engine.draft_head import load_head

    model, _ = tiny
    head = _head(tiny, tmp_path, "eagle")
    loaded = load_head(head, model)
    loaded.set_hot_tokens(torch.arange(0, 4000, 2))
    loaded.save(head, policy_config=model.config, card=json.loads((head / "card.json").read_text()))
    assert load_head(head, model).hot.tolist() == list(range(0, 4000, 2))
    assert (
        main(
            [
                "sglang-command",
                "--model",
                str(tiny_model_dir()),
                "--draft-head",
                str(head),
                "--json",
            ]
        )
        == 0
    )
    argv = json.loads(capsys.readouterr().out)
    assert _flags(argv)["--speculative-token-map"] == str(head / "hot_token_map.pt")
    torch.save(torch.tensor([1.5, 2.0]), head / "hot_token_map.pt")
    assert (
        main(["sglang-command", "--model", str(tiny_model_dir()), "--draft-head", str(head)]) == 2
    )
    assert "hot_token_map.pt: expected a 1-D tensor of token ids" in capsys.readouterr().err


def test_a_head_on_another_host_is_passed_through_as_before(capsys):
    assert (
        main(
            [
                "sglang-command",
                "--model",
                "/models/hat-qwen3.6",
                "--draft-head",
                "/models/hat-qwen3.6-mtp",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "--speculative-algorithm NEXTN" in out
        and "--speculative-draft-model-path /models/hat-qwen3.6-mtp" in out
    )


def test_the_engine_loads_a_saved_head_and_refuses_one_for_another_model(tiny, tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    from serving.engine.draft_head import DraftHeadError, load_head

    model, _ = tiny
    head = _head(tiny, tmp_path, "eagle")
    loaded = load_head(head, model)
    assert loaded.config.layout == "eagle"
    other = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=model.config.vocab_size,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=4,
            num_key_value_heads=2,
        )
    )
    with pytest.raises(DraftHeadError, match="harness_draft.hidden_size: the head has"):
        load_head(head, other)
    shutil.rmtree(head)
