"""The llama.cpp route on the tiny model exported to GGUF: the export is the torch model, a
request's later calls prefill only what was appended, concurrency changes no greedy output, the
budget and a cancel stop a call during prefill, and a missing or wrong GGUF is a clear error."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness import demo_harness_dir, load_dir
from harness.model_cache import tiny_model_dir
from harness.policies import GenerationSettings, make_policy
from harness.runtime import Agent
from serving.engine import Engine, EngineModel, SamplingParams
from serving.engine.policy import TransformersPolicy, load_model
from serving.gguf import (
    GgufError,
    default_quantization,
    gguf_for_checkpoint,
    header_values,
)
from serving.llama_cpp import (
    WAIT_FOR_STOPPING_S,
    LlamaCppError,
    LlamaCppPolicy,
    LlamaServer,
    RequestOwner,
    default_flash_attn,
    default_threads,
    llama_server_for,
    trained_context,
)

SYSTEM = "You are Mia, the host of a live stream selling kitchen goods. " * 20


def _tiny_f32() -> Path:
    return gguf_for_checkpoint(tiny_model_dir(), quantization="F32")


def _policy(max_new_tokens: int = 12) -> LlamaCppPolicy:
    return LlamaCppPolicy(
        tiny_model_dir(),
        gguf=_tiny_f32(),
        settings=GenerationSettings(max_new_tokens=max_new_tokens),
        server=llama_server_for(_tiny_f32(), slots=2, threads=1),
    )


def test_the_exported_gguf_computes_what_the_torch_model_computes():
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "how much is link 3?"},
    ]
    prompt = TransformersPolicy(tiny_model_dir(), engine="transformers").render(messages)
    engine = Engine(EngineModel(load_model(tiny_model_dir())[0]))
    try:
        torch_done = engine.generate(prompt, SamplingParams(max_new_tokens=8, logprobs=True))
    finally:
        engine.close()
    done = llama_server_for(_tiny_f32(), slots=2, threads=1).complete(prompt, max_new_tokens=8)
    assert done.ids == torch_done.ids
    assert done.logprobs == pytest.approx(torch_done.logprobs, abs=2e-3)


def test_a_requests_later_calls_prefill_only_what_was_appended():
    policy = _policy()
    system = "A Harness no other test renders. " + SYSTEM  # the process's server is shared
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": "how much is link 3?"},
    ]
    first = policy.generate(messages)
    assert first.cached_tokens == 0 and first.input_tokens > 300
    messages += [
        {"role": "assistant", "content": first.text},
        {
            "role": "user",
            "content": '<tool_response>{"name": "get_price", "result": 39}</tool_response>',
        },
    ]
    second = policy.generate(messages)
    # everything the first call saw and wrote is cached (but its last token, never fed back)
    assert second.cached_tokens == first.input_tokens + first.output_tokens - 1
    messages += [
        {"role": "assistant", "content": second.text},
        {"role": "user", "content": "thanks!"},
    ]
    third = policy.generate(messages)
    assert third.cached_tokens == second.input_tokens + second.output_tokens - 1
    assert third.input_tokens - third.cached_tokens < 40


def test_the_agent_records_cached_prompt_tokens_per_model_call():
    request = json.loads(Path("examples/requests/product_price.json").read_text())
    policy = _policy(max_new_tokens=24)
    with Agent(bundle=load_dir(demo_harness_dir()), policy=policy, connect_mcp=False) as agent:
        traj = agent.run(request)
    calls = traj.model_calls
    assert calls and all(c.cached_tokens is not None for c in calls)
    for earlier, later in zip(calls, calls[1:], strict=False):
        if earlier.error is None and later.error is None:
            assert (
                later.cached_tokens >= earlier.input_tokens
            )  # the earlier call's prompt is never prefilled again


def test_a_warm_up_prefills_the_harness_prompt_that_a_first_request_then_finds_cached(tmp_path):
    """``Agent.warm_up`` on one request: another request's first call finds the Harness's system
    prompt in llama.cpp's slot instead of prefilling it, and the warm-up is in no trajectory.
    Without one, the run's own preparation (``Policy.prepare``, before its budget) holds the
    Harness prefix: prefilled and saved by a first server, restored from disk by the next."""
    examples = Path("examples/requests")
    warm_request = json.loads((examples / "product_price.json").read_text())
    request = json.loads((examples / "promotion.json").read_text())
    prefix_sources = []
    for warm in (False, False, True):
        server = LlamaServer(_tiny_f32(), slots=2, threads=1, state_dir=tmp_path)
        try:
            policy = LlamaCppPolicy(
                tiny_model_dir(),
                gguf=_tiny_f32(),
                settings=GenerationSettings(max_new_tokens=4),
                server=server,
            )
            bundle = load_dir(demo_harness_dir())
            with Agent(bundle=bundle, policy=policy, connect_mcp=False) as agent:
                if warm:
                    done = agent.warm_up(warm_request)
                    assert done.output_tokens == 1 and done.input_tokens > 1000
                traj = agent.run(request)
            first = traj.model_calls[0]
            assert len(traj.model_calls) <= traj.rounds  # the warm-up is not one of them
            setup = traj.timings["setup"]
            prefix_sources.append(setup["prefix"])
            # the system prompt's Harness part: everything before the request's own context
            assert first.cached_tokens >= setup["prefix_tokens"] > first.input_tokens // 2
        finally:
            server.close()
    assert prefix_sources[:2] == ["prefilled", "file"]
    # after a warm-up a slot holds the prefix; it may count as held by the warm-up's call (its
    # owner untold) for HOLD_S, and then the prefix is restored into the other slot
    assert prefix_sources[2] in ("slot", "file")


def test_a_finished_requests_slot_serves_the_next_request_at_once():
    """Back-to-back requests: once the agent begins the next request, it takes the slot that shares
    its Harness prefix rather than an empty one; a request that may still be running keeps its
    slot."""
    shared = [{"role": "system", "content": "Static Harness blocks. " + SYSTEM[:200]}]
    first_prompt = shared + [
        {"role": "user", "content": "Shelf: " + "link 3: a kettle, 39 euros, 1.7 l; " * 30}
    ]
    second_prompt = shared + [{"role": "user", "content": "how much is link 3?"}]
    settings = GenerationSettings(max_new_tokens=4)
    for told, expect_cached in ((False, False), (True, True)):
        server = LlamaServer(_tiny_f32(), slots=2, threads=1)
        try:
            policy = LlamaCppPolicy(
                tiny_model_dir(), gguf=_tiny_f32(), settings=settings, server=server
            )
            policy.begin_request("a")
            assert policy.generate(first_prompt).cached_tokens == 0
            if told:
                policy.begin_request(
                    "b"
                )  # the agent begins its next request: the first one is over
                second = policy.generate(second_prompt)
            else:  # another agent's request: the first one may be between two calls
                other = LlamaCppPolicy(
                    tiny_model_dir(), gguf=_tiny_f32(), settings=settings, server=server
                )
                other.begin_request("b")
                second = other.generate(second_prompt)
            assert (second.cached_tokens > 40) is expect_cached, second.cached_tokens
        finally:
            server.close()


def test_slot_choice_after_a_request_ends_at_its_budget():
    """A request's last call stopped at the deadline: llama.cpp frees its slot at the next prefill
    batch, after the agent already began the next request. That request waits for the slot (it
    shares the Harness prefix) rather than prefill everything into an empty one, and the slot is not
    held for the request that is over; a slot busy with a live call is not waited for."""
    harness_prefix = list(range(10, 610))
    conversation = harness_prefix + list(range(1000, 1400))
    next_prompt = harness_prefix + [7, 8, 9]
    server = LlamaServer(_tiny_f32(), slots=2, threads=1)
    try:
        over = RequestOwner()
        server._give_slot(0, conversation[:-50], over)  # the request's earlier call
        assert server._take_slot(conversation, over) == 0  # its last call
        server._stopping(0)  # the caller gave up at its deadline; llama.cpp has not answered yet
        server.release(over)  # the agent began its next request
        threading.Timer(0.3, server._give_slot, args=(0, conversation, over)).start()
        started = time.perf_counter()
        assert server._take_slot(next_prompt, RequestOwner()) == 0  # not the empty slot 1
        assert 0.25 <= time.perf_counter() - started < WAIT_FOR_STOPPING_S
        server._give_slot(0, conversation, over)

        live = RequestOwner()
        assert server._take_slot(conversation, live) == 0  # a live call: busy, not stopping
        started = time.perf_counter()
        assert server._take_slot(next_prompt, RequestOwner()) == 1
        assert time.perf_counter() - started < 0.2
    finally:
        server.close()


class _Unanswering:
    """llama.cpp in the middle of a prefill batch: it reports nothing until ``go`` is set."""

    def __init__(self, server) -> None:
        self.server, self.go = server, threading.Event()

    def handle_completions(self, body, on_event):
        self.go.wait(10)
        return self.server.handle_completions(body, on_event)


def test_a_cancelled_call_returns_at_once_and_the_next_request_waits_for_its_slot():
    """The engine server cancels a call when its client goes away (the agent's budget ran out
    through the serving route): the call returns then, as one past its deadline does, and its slot
    counts as stopping until llama.cpp's next event, so the next request waits for the slot holding
    the Harness prefix rather than prefill everything into an empty one."""
    harness_prefix = list(range(10, 610))
    conversation = harness_prefix + list(range(1000, 1100))
    server = LlamaServer(_tiny_f32(), slots=2, threads=1)
    busy = server._server = _Unanswering(server._server)
    try:
        server._give_slot(0, conversation[:-50], RequestOwner())
        cancel = threading.Event()
        threading.Timer(0.2, cancel.set).start()
        started = time.perf_counter()
        done = server.complete(conversation, max_new_tokens=4, cancel=cancel)
        assert done.finish_reason == "cancelled" and done.ids == []
        assert 0.15 <= time.perf_counter() - started < 1.0
        assert server._slots[0].busy and server._slots[0].stopping
        threading.Timer(0.3, busy.go.set).start()  # llama.cpp's next event: it stops the call
        started = time.perf_counter()
        assert (
            server._take_slot(harness_prefix + [7, 8, 9], RequestOwner()) == 0
        )  # not the empty slot 1
        assert 0.25 <= time.perf_counter() - started < WAIT_FOR_STOPPING_S
    finally:
        busy.go.set()
        server.close()


def test_a_call_waiting_for_a_busy_slot_ends_at_its_deadline():
    """Every slot busy: a call waits for one only until its deadline (or its cancel), then ends as
    ``timeout`` (``cancelled``) with no tokens, rather than run after its caller has given up."""
    server = LlamaServer(_tiny_f32(), slots=1, threads=1)
    try:
        assert server._take_slot([1, 2, 3], RequestOwner()) == 0  # a live call holds the only slot
        started = time.perf_counter()
        done = server.complete([1, 2, 3, 4], max_new_tokens=4, deadline=started + 0.3)
        assert done.finish_reason == "timeout" and done.ids == []
        assert 0.25 <= time.perf_counter() - started < 1.0
        cancel = threading.Event()
        threading.Timer(0.2, cancel.set).start()
        started = time.perf_counter()
        done = server.complete([1, 2, 3, 4], max_new_tokens=4, cancel=cancel)
        assert done.finish_reason == "cancelled" and done.ids == []
        assert 0.15 <= time.perf_counter() - started < 1.0
        assert server._slots[0].busy  # still the live call's
    finally:
        server.close()


def test_threads_are_the_idle_cores_when_the_model_first_loads(monkeypatch):
    """Two threads on two busy cores wait on each other at every operation (no first token in 10 s
    where one thread took 3 s): the default is the cores idle at the first load, at least one."""
    import serving.llama_cpp as llama_cpp

    monkeypatch.delenv("HARNESS_LLAMA_THREADS", raising=False)
    monkeypatch.setattr(llama_cpp.os, "cpu_count", lambda: 4)
    try:
        for load, threads in ((0.2, 4), (1.4, 3), (3.6, 1), (12.0, 1)):
            monkeypatch.setattr(llama_cpp.os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
            default_threads.cache_clear()
            assert default_threads() == threads
        monkeypatch.setattr(llama_cpp.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
        assert default_threads() == 1  # chosen once per process: one server per file
        default_threads.cache_clear()
        monkeypatch.setenv("HARNESS_LLAMA_THREADS", "2")
        assert default_threads() == 2
    finally:
        default_threads.cache_clear()


def test_flash_attention_is_on_unless_turned_off(monkeypatch):
    monkeypatch.delenv("HARNESS_LLAMA_FLASH_ATTN", raising=False)
    assert default_flash_attn() is True
    monkeypatch.setenv("HARNESS_LLAMA_FLASH_ATTN", "off")
    assert default_flash_attn() is False
    monkeypatch.setenv("HARNESS_LLAMA_FLASH_ATTN", "sometimes")
    with pytest.raises(
        ValueError, match=r"\$HARNESS_LLAMA_FLASH_ATTN: 'sometimes' is not on or off"
    ):
        default_flash_attn()


def test_the_export_format_is_q8_0_unless_the_environment_names_another(monkeypatch):
    monkeypatch.delenv("HARNESS_GGUF_QUANTIZATION", raising=False)
    assert default_quantization() == "Q8_0"
    monkeypatch.setenv("HARNESS_GGUF_QUANTIZATION", "F32")
    assert LlamaCppPolicy(tiny_model_dir()).gguf_file() == _tiny_f32()
    monkeypatch.setenv("HARNESS_GGUF_QUANTIZATION", "Q4_K")
    with pytest.raises(
        ValueError, match=r"\$HARNESS_GGUF_QUANTIZATION: 'Q4_K' is not one of F32, F16, Q8_0"
    ):
        LlamaCppPolicy(tiny_model_dir()).gguf_file()


def test_eight_concurrent_greedy_requests_return_what_each_returns_alone():
    server = LlamaServer(_tiny_f32(), slots=8, threads=1)
    try:
        policy = LlamaCppPolicy(
            tiny_model_dir(), server=server, settings=GenerationSettings(max_new_tokens=10)
        )
        prompts = [
            [
                {"role": "system", "content": SYSTEM},
                {
                    "role": "user",
                    "content": f"viewer {i} asks about link {i} and its colour {i * 7}",
                },
            ]
            for i in range(8)
        ]
        alone = [policy.generate(p).text for p in prompts]
        for _ in range(2):
            with ThreadPoolExecutor(8) as pool:
                together = list(pool.map(lambda p: policy.generate(p).text, prompts))
            assert together == alone
    finally:
        server.close()


def test_the_budget_and_a_cancel_stop_a_call_during_prefill():
    server = llama_server_for(_tiny_f32(), slots=2, threads=1)
    long_prompt = list(range(1000, 2900))
    started = time.perf_counter()
    done = server.complete(long_prompt, max_new_tokens=400, deadline=started + 0.05)
    # the caller has its answer at the deadline, whenever llama.cpp next reports (a loaded machine
    # delays it)
    assert done.finish_reason == "timeout" and time.perf_counter() - started < 1.0
    cancel = threading.Event()
    cancel.set()
    assert (
        server.complete(long_prompt, max_new_tokens=400, cancel=cancel).finish_reason == "cancelled"
    )
    short = server.complete([1, 2, 3], max_new_tokens=3)
    assert short.finish_reason == "length" and len(short.ids) == 3


def test_bad_requests_and_files_are_named():
    server = llama_server_for(_tiny_f32(), slots=2, threads=1)
    with pytest.raises(
        LlamaCppError, match="prompt: 5000 tokens do not fit the 2048-token context"
    ):
        server.complete([5] * 5000, max_new_tokens=4)
    with pytest.raises(LlamaCppError, match="seed: expected an integer from 0 to 4294967295"):
        server.complete([5, 6], max_new_tokens=4, seed=10**40)


def test_a_missing_or_wrong_gguf_is_a_clear_error(tmp_path):
    with pytest.raises(GgufError, match="does not exist"):
        LlamaServer(tmp_path / "missing.gguf")
    text = tmp_path / "model.gguf"
    text.write_text("not a model")
    with pytest.raises(GgufError, match=r"is not a GGUF file \(it starts with b'not '"):
        LlamaServer(text)
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(_tiny_f32().read_bytes()[:4096])
    with pytest.raises(GgufError, match="llama.cpp could not load .*broken.gguf"):
        LlamaServer(broken)


def test_the_header_reader_reads_what_the_gguf_package_reads_without_decoding_the_vocabulary(
    tmp_path,
):
    """``header_values`` (what a llama.cpp start reads: 0.1 ms) agrees with the ``gguf`` package's
    reader (4 s: it decodes the 49,152-token vocabulary) on every scalar and string of the shipped
    file and of an export, and says so when a header ends early."""
    import gguf

    from harness.model_cache import gguf_path

    for path in (gguf_path(), _tiny_f32()):
        fields = gguf.GGUFReader(str(path)).fields
        scalars = {
            k: f.contents()
            for k, f in fields.items()
            if not k.startswith("GGUF.") and f.types and f.types[0] != gguf.GGUFValueType.ARRAY
        }
        read = header_values(path, lambda key: True)
        assert {k: read[k] for k in scalars} == pytest.approx(scalars), path
        assert [k for k in fields if not k.startswith("GGUF.")] == list(
            read
        )  # arrays skipped, not lost
        assert trained_context(path) == fields["llama.context_length"].contents()
    assert header_values(
        _tiny_f32(),
        lambda key: key.startswith("general."),
        lambda found: "general.architecture" in found,
    ) == {"general.architecture": "llama"}
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(_tiny_f32().read_bytes()[:40])
    with pytest.raises(GgufError, match="cut.gguf: the GGUF header ends early"):
        trained_context(cut)


def test_the_local_spec_runs_on_llama_cpp_unless_torch_is_asked(monkeypatch):
    assert isinstance(make_policy("tiny"), LlamaCppPolicy)
    assert isinstance(make_policy("torch:tiny"), TransformersPolicy)
    monkeypatch.setenv("HARNESS_LOCAL_ENGINE", "torch")
    assert isinstance(make_policy("local:tiny"), TransformersPolicy)
    monkeypatch.setenv("HARNESS_LOCAL_ENGINE", "cuda")
    with pytest.raises(
        ValueError, match=r"\$HARNESS_LOCAL_ENGINE: 'cuda' is not one of llama, torch"
    ):
        make_policy("tiny")


def test_the_export_carries_the_checkpoints_rope_base_from_rope_parameters(tmp_path):
    """A checkpoint trained here writes rope_theta inside rope_parameters (transformers 5); the
    export read only the top-level key and wrote llama.cpp's default 10,000 for SmolLM2's 100,000,
    so every trained checkpoint ran with the wrong positions. The random tiny model's outputs hardly
    depend on them, so the file's own field is checked, for both spellings, and a scaled RoPE is
    refused by name."""
    import shutil

    from serving.gguf import export_gguf

    def rope_base(path: Path) -> float:
        return header_values(path, lambda key: key == "llama.rope.freq_base")[
            "llama.rope.freq_base"
        ]

    config = json.loads((tiny_model_dir() / "config.json").read_text())
    assert config["rope_parameters"]["rope_theta"] == 100000.0 and "rope_theta" not in config
    assert rope_base(_tiny_f32()) == 100000.0
    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_model_dir(), folder)
    top_level = {k: v for k, v in config.items() if k != "rope_parameters"} | {
        "rope_theta": 50000.0
    }
    (folder / "config.json").write_text(json.dumps(top_level))
    export_gguf(folder, tmp_path / "top.gguf", quantization="F32")
    assert rope_base(tmp_path / "top.gguf") == 50000.0
    scaled = config | {
        "rope_parameters": {"rope_theta": 100000.0, "rope_type": "yarn", "factor": 2.0}
    }
    (folder / "config.json").write_text(json.dumps(scaled))
    with pytest.raises(GgufError, match="rope type 'yarn' is not exported"):
        export_gguf(folder, tmp_path / "scaled.gguf", quantization="F32")


def test_the_tokenizer_loads_without_torch_and_tokenizes_as_autotokenizer_does():
    """The llama.cpp route reads a checkpoint's tokenizer with the fast tokenizer class it names,
    not through AutoTokenizer (whose module imports torch: 2 s of every engine server's start)."""
    import subprocess
    import sys

    from transformers import AutoTokenizer

    messages = [
        {"role": "system", "content": "You are Mia.\n- rule one"},
        {
            "role": "user",
            "content": 'Viewer says:  price of link 3?\n<tool_call>{"name": "x"}</tool_call>',
        },
    ]
    script = (
        "import json, sys; from serving.llama_cpp import load_tokenizer; "
        f"t = load_tokenizer({str(tiny_model_dir())!r}); "
        f"text = t.apply_chat_template({messages!r}, tokenize=False, add_generation_prompt=True); "
        "print(json.dumps([type(t).__name__, 'torch' in sys.modules, t(text)['input_ids'], "
        "t.convert_tokens_to_ids('<|im_end|>')]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    name, torch_loaded, ids, end = json.loads(done.stdout.strip().splitlines()[-1])
    assert not torch_loaded
    auto = AutoTokenizer.from_pretrained(tiny_model_dir())
    text = auto.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert (name, ids, end) == (
        type(auto).__name__,
        auto(text)["input_ids"],
        auto.convert_tokens_to_ids("<|im_end|>"),
    )
