"""Serving profiles: the built-ins, inline routes, and errors that say what is valid."""

import pytest

from serving.profiles import ProfileError, load_profiles, resolve_route


def test_builtin_profiles_cover_the_three_engines():
    profiles = load_profiles()
    assert (
        profiles["cpu-local"].engine == "transformers"
        and profiles["cpu-local"].checkpoint == "default"
    )
    assert profiles["cpu-tiny"].checkpoint == "tiny"
    gpu = profiles["gpu-sglang"]
    assert gpu.engine == "sglang" and gpu.base_url.endswith("/v1") and gpu.draft_head


@pytest.mark.parametrize(
    ("route", "engine", "base_url", "model", "key_env"),
    [
        (
            "sglang:http://10.0.0.5:30000/v1:policy",
            "sglang",
            "http://10.0.0.5:30000/v1",
            "policy",
            None,
        ),
        (
            "openai:https://api.vendor.example/v1:vendor-large",
            "openai",
            "https://api.vendor.example/v1",
            "vendor-large",
            "OPENAI_API_KEY",
        ),
        (
            "openai:https://api.vendor.example/v1:org/model-x:VENDOR_KEY",
            "openai",
            "https://api.vendor.example/v1",
            "org/model-x",
            "VENDOR_KEY",
        ),
        (
            "openai:http://127.0.0.1:8000/v1:m",
            "openai",
            "http://127.0.0.1:8000/v1",
            "m",
            "OPENAI_API_KEY",
        ),
    ],
)
def test_inline_routes(route, engine, base_url, model, key_env):
    p = resolve_route(route)
    assert (p.engine, p.base_url, p.model, p.api_key_env) == (engine, base_url, model, key_env)


def test_inline_transformers_route_names_a_checkpoint():
    p = resolve_route("transformers:/ckpt/hat-sft")
    assert p.engine == "transformers" and p.checkpoint == "/ckpt/hat-sft"


def test_bad_routes_say_what_is_valid():
    with pytest.raises(
        ProfileError,
        match=r"not a profile .*\(known: cpu-engine, cpu-engine-fp32, cpu-engine-int8, "
        r"cpu-engine-tiny, cpu-engine-tiny-torch, cpu-local, cpu-tiny, gpu-sglang\)",
    ):
        resolve_route("gpu-fast")
    with pytest.raises(ProfileError, match="expected sglang:BASE_URL:MODEL"):
        resolve_route("sglang:http://127.0.0.1:30000")


def test_vendor_key_comes_from_the_environment(monkeypatch):
    p = resolve_route("openai:https://api.vendor.example/v1:m:VENDOR_TEST_KEY")
    monkeypatch.delenv("VENDOR_TEST_KEY", raising=False)
    with pytest.raises(ProfileError, match="VENDOR_TEST_KEY is not set"):
        p.api_key()
    monkeypatch.setenv("VENDOR_TEST_KEY", "sk-test")
    assert p.api_key() == "sk-test"
    assert "sk-test" not in repr(p.describe())  # the run record keeps the variable name only


def test_profiles_file_errors_name_file_profile_and_field(tmp_path):
    path = tmp_path / "profiles.yaml"
    path.write_text(
        "profiles:\n  vendor:\n    engine: openai\n    "
        "base_url: https://x.example/v1\n    model: m\n"
    )
    with pytest.raises(ProfileError, match=r"profiles.yaml: profiles.vendor.api_key_env: required"):
        load_profiles(path)
    path.write_text("profiles:\n  local:\n    engine: vllm\n")
    with pytest.raises(
        ProfileError,
        match=r"profiles.local.engine: 'vllm' is not one of local, transformers, sglang, openai",
    ):
        load_profiles(path)
    path.write_text(
        "profiles:\n  local:\n    engine: transformers\n    checkpoint: tiny\n    gpu: 1\n"
    )
    with pytest.raises(ProfileError, match=r"unknown field\(s\) \['gpu'\]"):
        load_profiles(path)
    path.write_text(
        "profiles:\n  local:\n    engine: transformers\n    checkpoint: tiny\n    port: '80'\n"
    )
    with pytest.raises(ProfileError, match=r"profiles.local.port: '80' has the wrong type"):
        load_profiles(path)


def test_thread_count_is_a_setting_of_the_engines_run_here(tmp_path):
    assert load_profiles()["cpu-local"].threads == 1
    path = tmp_path / "profiles.yaml"
    path.write_text(
        "profiles:\n  gpu:\n    engine: sglang\n    base_url: "
        "http://h:30000/v1\n    model: m\n    threads: 4\n"
    )
    with pytest.raises(
        ProfileError, match=r"profiles.gpu.threads: only engines local and transformers run here"
    ):
        load_profiles(path)
    path.write_text(
        "profiles:\n  cpu:\n    engine: transformers\n    checkpoint: tiny\n    threads: 0\n"
    )
    with pytest.raises(ProfileError, match=r"profiles.cpu.threads: 0 must be >= 1"):
        load_profiles(path)
