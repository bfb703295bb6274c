"""Settings readers fail loudly and name the variable (the settings themselves:
tests/security/test_deploy_defaults.py)."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from studio.envreaders import env_bool, env_float, env_int, env_list, env_str


def test_env_bool_accepts_the_usual_spellings(monkeypatch):
    for text, expected in [
        ("1", True),
        ("yes", True),
        ("On", True),
        ("0", False),
        ("false", False),
        ("", False),
    ]:
        monkeypatch.setenv("HS_FLAG", text)
        assert env_bool("HS_FLAG") is expected


def test_env_bool_rejects_anything_else_naming_the_variable(monkeypatch):
    monkeypatch.setenv("HS_FLAG", "maybe")
    with pytest.raises(
        ImproperlyConfigured, match=r"HS_FLAG='maybe' is not a boolean; use one of 1/0"
    ):
        env_bool("HS_FLAG")


def test_env_int_rejects_text_and_values_below_the_minimum(monkeypatch):
    monkeypatch.setenv("HS_N", "ten")
    with pytest.raises(ImproperlyConfigured, match="HS_N='ten' is not an integer"):
        env_int("HS_N", 3)
    monkeypatch.setenv("HS_N", "0")
    with pytest.raises(ImproperlyConfigured, match="HS_N=0 must be at least 1"):
        env_int("HS_N", 3, minimum=1)
    monkeypatch.delenv("HS_N")
    assert env_int("HS_N", 3) == 3


def test_env_float_list_and_required_str(monkeypatch):
    monkeypatch.setenv("HS_F", "2.5")
    assert env_float("HS_F", 1.0) == 2.5
    monkeypatch.setenv("HS_L", "a, b,,c ")
    assert env_list("HS_L", []) == ["a", "b", "c"]
    monkeypatch.delenv("HS_REQUIRED", raising=False)
    with pytest.raises(ImproperlyConfigured, match="HS_REQUIRED is required"):
        env_str("HS_REQUIRED")
