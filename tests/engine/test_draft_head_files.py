"""A draft head's folder is read without torch (harness.draft_head_files): the web process lists
heads, matches them to checkpoints and names their files in release manifests without loading
torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness.model_cache import tiny_model_dir
from serving.engine.draft_head import (
    DraftHead,
    head_tensors,
    read_card,
    read_config,
    tensor_problems,
)


def test_the_folder_readers_give_what_the_engine_wrote_and_import_no_torch(tmp_path):
    from serving.engine.policy import load_model

    tiny_dir = Path(tiny_model_dir())
    hf_model, _ = load_model(tiny_dir)
    head = DraftHead.for_policy(hf_model, layout="eagle", steps=2)
    folder = head.save(tmp_path / "head", policy_config=hf_model.config, card={"policy": "tiny"})
    expected = {
        "config": read_config(folder).to_dict(),
        "card": read_card(folder),
        "tensors": {name: list(shape) for name, shape in head_tensors(folder).items()},
        "problems": tensor_problems(read_config(folder), head_tensors(folder)),
    }
    script = f"""
import json, sys
from types import SimpleNamespace
from harness.draft_head_files import (TOKEN_MAP_FILE, head_tensors, policy_mismatch, read_card,
                                      read_config, tensor_problems)
folder = {str(folder)!r}
config = read_config(folder)
policy = SimpleNamespace(**json.load(open({str(tiny_dir / "config.json")!r})))
print(json.dumps({{"config": config.to_dict(), "card": read_card(folder),
                  "tensors": {{k: list(v) for k, v in head_tensors(folder).items()}},
                  "problems": tensor_problems(config, head_tensors(folder)),
                  "mismatch": policy_mismatch(config, policy), "token_map": TOKEN_MAP_FILE,
                  "torch": "torch" in sys.modules}}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    read = json.loads(done.stdout)
    assert read.pop("torch") is False
    assert read.pop("mismatch") == [] and read.pop("token_map") == "hot_token_map.pt"
    assert read == expected and expected["problems"] == []
