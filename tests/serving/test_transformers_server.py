"""`transformers serve` as a managed process: health, a streamed chat answer, clean shutdown."""

import inspect
import json
import os
from pathlib import Path

import httpx
import pytest

from serving.endpoint import Endpoint, GenerationSettings
from serving.profiles import resolve_route
from serving.transformers_server import ServerStartError, TransformersServer, free_port


@pytest.fixture(scope="module")
def tiny_dir():
    from harness.model_cache import tiny_model_dir

    return tiny_model_dir()


def test_command_uses_only_flags_transformers_serve_declares(tmp_path, tiny_dir):
    from transformers.cli.serve import Serve

    declared = {
        "--" + name.replace("_", "-") for name in inspect.signature(Serve.__init__).parameters
    }
    declared |= {"--no-" + flag[2:] for flag in declared}
    server = TransformersServer(
        checkpoint=tiny_dir, log_path=tmp_path / "log", continuous_batching=True
    )
    flags = [t for t in server.command() if t.startswith("--")]
    assert flags and all(f in declared for f in flags), [f for f in flags if f not in declared]


@pytest.mark.slow
def test_start_answer_stream_and_stop(tmp_path, tiny_dir):
    log = tmp_path / "serve.log"
    with TransformersServer(checkpoint=tiny_dir, log_path=log, threads=1) as server:
        assert server.healthy()
        environ = Path(f"/proc/{server.pid}/environ").read_bytes().split(b"\0")
        assert b"OMP_NUM_THREADS=1" in environ and b"HF_HUB_OFFLINE=1" in environ
        models = httpx.get(f"{server.base_url}/models").json()["data"]
        assert [m["id"] for m in models] == [str(tiny_dir.resolve())]
        endpoint = Endpoint(
            profile=resolve_route(f"transformers:{tiny_dir}"),
            base_url=server.base_url,
            model=server.model,
            checkpoint={"path": str(tiny_dir)},
        )
        # usage on the stream's last chunk, asked for as OpenAIChatPolicy asks (transformers 5.25
        # sends it only then, as OpenAI's API does)
        body = {
            "model": server.model,
            "messages": [{"role": "user", "content": "hi"}],
            "stream": True,
            "stream_options": {"include_usage": True},
            **endpoint.extra_body(GenerationSettings(temperature=1.0, top_p=0.95, max_tokens=6)),
        }
        chunks = []
        with httpx.stream(
            "POST", f"{server.base_url}/chat/completions", json=body, timeout=60
        ) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    chunks.append(json.loads(line[6:]))
        usage = [c["usage"] for c in chunks if c.get("usage")]
        assert usage, (
            f"no usage chunk; the server sent {chunks[-3:]}; "
            f"its log ends {log.read_text()[-1500:]!r}"
        )
        assert usage[-1]["completion_tokens"] <= 6
        pid = server.pid
    assert not server.healthy()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert "Uvicorn running" in log.read_text()
    # the sampling settings reached the server: no "top_p ignored" warning (greedy would log it)
    assert "not valid and may be ignored" not in log.read_text()


def test_a_server_that_dies_at_start_reports_its_log(tmp_path, tiny_dir):
    port = free_port()
    server = TransformersServer(
        checkpoint=tiny_dir,
        log_path=tmp_path / "serve.log",
        port=port,
        extra_args=("--no-such-flag",),
        startup_timeout_s=60,
    )
    with pytest.raises(
        ServerStartError,
        match=r"(?s)exited with code \d+ before it was healthy.*No such option .--no-such-flag",
    ):
        server.start()
    assert server.pid is None


def test_checkpoint_without_config_is_refused(tmp_path):
    with pytest.raises(ServerStartError, match="no config.json"):
        TransformersServer(checkpoint=tmp_path, log_path=tmp_path / "log")
