"""Helpers for the runtime tests: Harness variants, requests and scripted tool calls."""

from __future__ import annotations

import json
import re


def with_constraints(bundle, **values):
    """The bundle with some prompt.yaml constraints changed."""
    text = bundle.files["prompt.yaml"]
    for key, value in values.items():
        text, n = re.subn(rf"(?m)^(  {key}:) .*$", rf"\g<1> {value}", text)
        assert n == 1, key
    return bundle.with_files({"prompt.yaml": text})


def price_request(**extra):
    data = {
        "id": "price-1",
        "comments": [{"user": "amy", "text": "How much is product #3?"}],
        "room": {"current_link_id": 1, "shelf": [1, 2, 3, 4, 5]},
    }
    data.update(extra)
    return data


def call(tool_name, /, **arguments):
    return "<tool_call>" + json.dumps({"name": tool_name, "arguments": arguments}) + "</tool_call>"
