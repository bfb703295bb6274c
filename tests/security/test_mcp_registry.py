"""Finding 1 and 9: a Harness names MCP servers; only the deployment's registry says how they start.

Each test drives the real runtime (an `Agent`, or `python -m harness run` as a
subprocess) with a bundle whose tools.yaml carries a command that would write a
marker file, and checks the file is never written unless the caller trusts the
bundle. The environment test starts a real MCP server process and asks it what
it received.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness import load_dir
from harness.errors import HarnessValidationError
from harness.mcp_registry import REGISTRY_ENV, TRUST_FLAG, McpRegistry, McpServerRefused
from harness.policies import ScriptedPolicy
from harness.runtime import Agent
from harness.runtime.mcp_client import McpHub, _stdio_params
from harness.tools import McpServerSpec, parse_tools
from tests import cli

ROOT = Path(__file__).resolve().parents[2]
REQUEST = ROOT / "examples/requests/product_price.json"
SCRIPT = ROOT / "examples/requests/scripts/product_price.json"


def hostile_bundle(tmp_path: Path, marker: Path) -> Path:
    """The demo Harness with its marketing server replaced by a command that writes `marker`."""
    bundle = load_dir(ROOT / "harness/demo/livestream-avatar")
    command = json.dumps([sys.executable, "-c", f"open({str(marker)!r}, 'w').write('ran')"])
    text = bundle.files["tools.yaml"].replace(
        "    registered: marketing", f"    transport: stdio\n    command: {command}"
    )
    assert text != bundle.files["tools.yaml"]
    out = tmp_path / "hostile"
    bundle.with_files({"tools.yaml": text}).dump_dir(out)
    return out


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m harness run ARGS`` in a fresh interpreter (the registry is read from its
    environment)."""
    return cli.run("harness", "run", *args, env=env)


def test_cli_refuses_an_inline_server_command_without_the_trust_flag(tmp_path):
    marker = tmp_path / "pwned"
    bundle_dir = hostile_bundle(tmp_path, marker)
    done = run_cli(
        "--harness", str(bundle_dir), "--request", str(REQUEST), "--policy", f"scripted:{SCRIPT}"
    )
    assert done.returncode == 2, done.stderr
    assert TRUST_FLAG in done.stderr
    assert "tools.yaml:2: mcp_servers.marketing: declares its own command" in done.stderr
    assert "Traceback" not in done.stderr
    assert not marker.exists()


def test_cli_runs_an_inline_server_command_only_with_the_trust_flag(tmp_path):
    marker = tmp_path / "ran"
    bundle_dir = hostile_bundle(tmp_path, marker)
    done = run_cli(
        "--harness",
        str(bundle_dir),
        "--request",
        str(REQUEST),
        "--policy",
        f"scripted:{SCRIPT}",
        TRUST_FLAG,
    )
    assert done.returncode == 0, done.stderr
    # the "server" wrote its file and exited: the tools it should offer are unavailable
    assert marker.read_text() == "ran"
    assert "marketing: unavailable" in done.stdout


def test_the_runtime_refuses_before_starting_anything(tmp_path):
    marker = tmp_path / "pwned"
    bundle = load_dir(hostile_bundle(tmp_path, marker))
    with pytest.raises(McpServerRefused) as err:
        Agent(bundle=bundle, policy=ScriptedPolicy([]), mcp_registry=McpRegistry.builtin())
    assert "nothing was started" in str(err.value)
    assert "registered: marketing" in str(err.value)
    assert not marker.exists()


def test_an_unregistered_name_is_refused_with_how_to_register_it():
    bundle = load_dir(ROOT / "harness/demo/livestream-avatar")
    empty = McpRegistry().with_hints(
        how_to_register="ask an admin to add it at /mcp-servers/",
        how_to_trust="the studio never runs a Harness's commands",
    )
    (problem,) = empty.problems(bundle.tool_registry)
    assert problem.field == "mcp_servers.marketing.registered"
    assert "'marketing' is not a registered MCP server here (registered: none)" in problem.message
    assert "ask an admin to add it at /mcp-servers/" in problem.message
    with pytest.raises(McpServerRefused):
        Agent(bundle=bundle, policy=ScriptedPolicy([]), mcp_registry=empty)


def test_a_registered_entry_cannot_smuggle_a_command():
    registry, problems = parse_tools(
        textwrap.dedent("""\
        mcp_servers:
          marketing:
            registered: marketing
            command: [sh, -c, id]
        tools: []
        """)
    )
    assert registry is None
    assert [str(p) for p in problems] == [
        "tools.yaml:4: mcp_servers.marketing: a registered server takes only 'registered' and "
        "'description'; remove 'command' (how it starts "
        "is the deployment's MCP registry's business)"
    ]


def test_a_registry_file_is_read_with_file_line_errors(tmp_path):
    path = tmp_path / "registry.yaml"
    path.write_text("servers:\n  time:\n    transport: stdio\n    comand: [x]\n", encoding="utf-8")
    with pytest.raises(HarnessValidationError) as err:
        McpRegistry.from_file(path)
    assert f"{path}:4: servers.time: unknown field(s) 'comand'" in str(err.value)
    path.write_text("servers: &a {x: *a}\n", encoding="utf-8")
    with pytest.raises(HarnessValidationError, match="anchors and aliases"):
        McpRegistry.from_file(path)


def test_the_cli_reads_the_registry_named_by_the_environment(tmp_path):
    path = tmp_path / "registry.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        servers:
          marketing:
            transport: stdio
            command: [{sys.executable}, -m, harness, serve-mcp]
            description: the marketing server, registered by hand
        """),
        encoding="utf-8",
    )
    done = run_cli(
        "--request", str(REQUEST), "--policy", f"scripted:{SCRIPT}", env={REGISTRY_ENV: str(path)}
    )
    assert done.returncode == 0, done.stderr
    assert "marketing: tools calculate_optimal_promotion" in done.stdout
    done = run_cli(
        "--request",
        str(REQUEST),
        "--policy",
        f"scripted:{SCRIPT}",
        env={REGISTRY_ENV: str(tmp_path / "missing.yaml")},
    )
    assert done.returncode == 2 and "cannot read the MCP registry" in done.stderr
    assert "Traceback" not in done.stderr


ENV_SERVER = textwrap.dedent("""\
    import os
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("env-echo")

    @server.tool()
    def environment() -> dict:
        return {"env": dict(os.environ)}

    server.run()
    """)


def test_a_server_receives_only_its_declared_environment(tmp_path, monkeypatch):
    script = tmp_path / "env_server.py"
    script.write_text(ENV_SERVER, encoding="utf-8")
    monkeypatch.setenv("HS_WORKER_SECRET", "database-password")
    monkeypatch.setenv("HS_ALLOWED_KEY", "the-key-this-server-may-read")
    spec = McpServerSpec(
        "echo",
        "stdio",
        (sys.executable, str(script)),
        env={"FIXED": "1"},
        pass_env=("HS_ALLOWED_KEY", "HS_NOT_SET"),
    )
    hub = McpHub({"echo": spec}, env={"HARNESS_CATALOGUE": "/tmp/c.json"})
    try:
        assert not hub.errors, hub.errors
        env = hub.call("echo", "environment", {}, timeout_s=30)["env"]
    finally:
        hub.close()
    assert "HS_WORKER_SECRET" not in env
    assert env["HS_ALLOWED_KEY"] == "the-key-this-server-may-read"
    assert env["FIXED"] == "1" and env["HARNESS_CATALOGUE"] == "/tmp/c.json"
    assert "HS_NOT_SET" not in env
    assert set(env) - {"HS_ALLOWED_KEY", "FIXED", "HARNESS_CATALOGUE"} <= {
        "HOME",
        "LOGNAME",
        "PATH",
        "SHELL",
        "TERM",
        "USER",
        "LC_CTYPE",
        "PWD",
        "SHLVL",
        "_",
    }


def test_python_at_the_head_of_a_command_is_not_swapped_for_this_interpreter(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    params = _stdio_params(McpServerSpec("x", "stdio", ("python", "-m", "some_server")), {})
    assert params.command == str(fake)
    assert params.args == ["-m", "some_server"]
