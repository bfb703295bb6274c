"""SGLang and vendor routes: reachability and key checks before a run starts."""

import json

import pytest

from serving.endpoint import GenerationSettings, open_endpoint
from serving.profiles import ProfileError, resolve_route


@pytest.fixture
def vendor_url(fake_openai):
    """A vendor's OpenAI-compatible API (tests/fake_openai.py) that lists one model and takes one
    key."""
    fake_openai.models, fake_openai.api_key = ["vendor-large"], "sk-right"
    return fake_openai.url


def test_vendor_route_opens_with_the_key_from_the_environment(vendor_url, monkeypatch, tmp_path):
    monkeypatch.setenv("VENDOR_KEY", "sk-right")
    profile = resolve_route(f"openai:{vendor_url}:vendor-large:VENDOR_KEY")
    with open_endpoint(profile=profile, log_dir=tmp_path) as endpoint:
        assert endpoint.base_url == vendor_url and endpoint.model == "vendor-large"
        assert endpoint.api_key == "sk-right"
        assert (
            endpoint.extra_body(GenerationSettings()) is None
        )  # vendors take temperature/top_p as sent
        described = json.dumps(endpoint.describe())
    assert "sk-right" not in described and "VENDOR_KEY" in described


def test_a_wrong_key_is_refused_before_the_run(vendor_url, monkeypatch, tmp_path):
    monkeypatch.setenv("VENDOR_KEY", "sk-wrong")
    profile = resolve_route(f"openai:{vendor_url}:vendor-large:VENDOR_KEY")
    with (
        pytest.raises(ProfileError, match="refused the API key"),
        open_endpoint(profile=profile, log_dir=tmp_path),
    ):
        pass


def test_an_sglang_server_that_is_not_running_is_reported(tmp_path):
    from serving.transformers_server import free_port

    profile = resolve_route(f"sglang:http://127.0.0.1:{free_port()}/v1:hat-qwen")
    with (
        pytest.raises(ProfileError, match=r"did not answer.*SGLang launch command"),
        open_endpoint(profile=profile, log_dir=tmp_path),
    ):
        pass
