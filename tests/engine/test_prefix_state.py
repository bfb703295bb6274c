"""A Harness prefix's prefilled state on disk (``serving.prefix_state``): a new llama.cpp
server (what a fresh process has) restores it into a slot instead of prefilling it and answers as
a cold server does; a damaged or foreign file is never used; the README's command in a fresh
process finds what a first one saved."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from harness import demo_harness_dir, load_dir
from harness.model_cache import tiny_model_dir
from harness.policies import GenerationSettings
from harness.prompt_sharing import shared_prefix
from serving import prefix_state
from serving.gguf import gguf_for_checkpoint
from serving.llama_cpp import LlamaCppPolicy, LlamaServer
from tests.cli import run

SHARED = shared_prefix(load_dir(demo_harness_dir()))
MESSAGES = [
    {"role": "system", "content": SHARED + "Products on the shelf: #3 Sunscreen SPF50, 89 yuan."},
    {"role": "user", "content": "Viewer amy says: How much is product #3?"},
]


def _tiny_f32() -> Path:
    return gguf_for_checkpoint(tiny_model_dir(), quantization="F32")


def _policy(server: LlamaServer) -> LlamaCppPolicy:
    return LlamaCppPolicy(
        tiny_model_dir(),
        gguf=_tiny_f32(),
        settings=GenerationSettings(max_new_tokens=12),
        server=server,
    )


def test_a_new_server_restores_the_prefix_from_disk_and_answers_as_a_cold_one(tmp_path):
    states = tmp_path / "states"
    servers = [LlamaServer(_tiny_f32(), slots=2, threads=1, state_dir=states) for _ in range(3)]
    try:
        cold = _policy(servers[0]).generate(MESSAGES)
        assert cold.cached_tokens == 0

        first = _policy(servers[1])
        first.begin_request("r1")  # as the agent does before it prepares
        setup = first.prepare(SHARED)
        assert setup["prefix"] == "prefilled" and setup["prefix_tokens"] > 1000
        saved = list(states.glob("*.state"))
        assert len(saved) == 1 and saved[0].stat().st_size > 0
        assert first.prepare(SHARED)["prefix"] == "slot"  # held already: nothing to do

        fresh = _policy(servers[2])
        fresh.begin_request("r2")
        setup = fresh.prepare(SHARED)
        assert setup["prefix"] == "file", setup
        done = fresh.generate(MESSAGES)
        assert done.cached_tokens >= setup["prefix_tokens"]
        assert done.text == cold.text and done.output_tokens == cold.output_tokens
    finally:
        for server in servers:
            server.close()


def test_a_damaged_state_file_is_prefilled_again_and_replaced(tmp_path):
    states = tmp_path / "states"
    server = LlamaServer(_tiny_f32(), slots=2, threads=1, state_dir=states)
    try:
        policy = _policy(server)
        tokens = policy.prefix_ids(SHARED)
        name = prefix_state.state_name(server._model_key, tokens)
        (states / name).write_bytes(b"not a llama.cpp state")
        assert policy.prepare(SHARED)["prefix"] == "prefilled"
        assert (states / name).stat().st_size > 1000
    finally:
        server.close()
    again = LlamaServer(_tiny_f32(), slots=2, threads=1, state_dir=states)
    try:
        assert _policy(again).prepare(SHARED)["prefix"] == "file"
    finally:
        again.close()


def test_a_state_belongs_to_one_model_file_and_one_prefix(tmp_path):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"weights")
    key = prefix_state.model_key(model, flash_attn=True)
    assert key != prefix_state.model_key(model, flash_attn=False)
    assert prefix_state.state_name(key, [1, 2, 3]) != prefix_state.state_name(key, [1, 2, 4])
    os.utime(model, ns=(0, 0))  # the file changed: its states are not restored into it
    assert prefix_state.model_key(model, flash_attn=True) != key


def test_only_the_most_recently_used_states_are_kept(tmp_path):
    now = time.time()
    for i in range(prefix_state.KEEP + 3):
        path = tmp_path / f"prefix-{i}{prefix_state.SUFFIX}"
        path.write_bytes(b"x")
        os.utime(path, (now - 1000 + i, now - 1000 + i))
    removed = prefix_state.prune(tmp_path)
    assert sorted(p.name for p in removed) == [f"prefix-{i}{prefix_state.SUFFIX}" for i in range(3)]
    assert len(list(tmp_path.glob(f"*{prefix_state.SUFFIX}"))) == prefix_state.KEEP


def test_the_readme_command_in_a_fresh_process_restores_the_prefix_a_first_one_saved(tmp_path):
    """Two fresh processes of ``python -m harness run`` on the llama.cpp route: the first prefills
    the Harness prefix before its budget and saves it, the second restores it; the record says what
    the budget covers and what came before it."""
    args = ("harness", "run", "--request", "examples/requests/product_price.json")
    args += ("--policy", "tiny", "--json", "--budget-s", "120", "--max-new-tokens", "8")
    env = {"HARNESS_PREFIX_STATES": str(tmp_path)}
    records = []
    for _ in range(2):
        done = run(*args, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        records.append(json.loads(done.stdout))
    first, second = (r["timings"] for r in records)
    assert first["setup"]["prefix"] == "prefilled" and second["setup"]["prefix"] == "file"
    assert len(list(tmp_path.glob("*.state"))) == 1
    call = records[1]["model_calls"][0]
    assert call["cached_tokens"] >= second["setup"]["prefix_tokens"] > 1000
    assert second["setup_s"] >= second["setup"]["load_s"]
    assert "setup_s" in records[1]["settings"]["budget_covers"]
    assert [c["text"] for c in records[0]["model_calls"]] == [
        c["text"] for c in records[1]["model_calls"]
    ]
