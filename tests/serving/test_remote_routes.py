"""SGLang and vendor routes: reachability and key checks before a run starts."""

import http.server
import json
import threading

import pytest

from serving.endpoint import GenerationSettings, open_endpoint
from serving.profiles import ProfileError, resolve_route


class _Models(http.server.BaseHTTPRequestHandler):
    expected_key = "sk-right"

    def do_GET(self):  # noqa: N802 - http.server's naming
        if self.path != "/v1/models":
            self.send_response(404)
            self.end_headers()
            return
        if self.headers.get("Authorization") != f"Bearer {self.expected_key}":
            self.send_response(401)
            self.end_headers()
            return
        body = json.dumps({"object": "list", "data": [{"id": "vendor-large"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def vendor_url():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_vendor_route_opens_with_the_key_from_the_environment(vendor_url, monkeypatch, tmp_path):
    monkeypatch.setenv("VENDOR_KEY", "sk-right")
    profile = resolve_route(f"openai:{vendor_url}:vendor-large:VENDOR_KEY")
    with open_endpoint(profile=profile, log_dir=tmp_path) as endpoint:
        assert endpoint.base_url == vendor_url and endpoint.model == "vendor-large"
        assert endpoint.api_key == "sk-right"
        assert endpoint.extra_body(GenerationSettings()) is None  # vendors take temperature/top_p as sent
        described = json.dumps(endpoint.describe())
    assert "sk-right" not in described and "VENDOR_KEY" in described


def test_a_wrong_key_is_refused_before_the_run(vendor_url, monkeypatch, tmp_path):
    monkeypatch.setenv("VENDOR_KEY", "sk-wrong")
    profile = resolve_route(f"openai:{vendor_url}:vendor-large:VENDOR_KEY")
    with pytest.raises(ProfileError, match="refused the API key"), open_endpoint(profile=profile, log_dir=tmp_path):
        pass


def test_an_sglang_server_that_is_not_running_is_reported(tmp_path):
    from serving.transformers_server import free_port

    profile = resolve_route(f"sglang:http://127.0.0.1:{free_port()}/v1:hat-qwen")
    with pytest.raises(ProfileError, match=r"did not answer.*SGLang launch command"), \
            open_endpoint(profile=profile, log_dir=tmp_path):
        pass
