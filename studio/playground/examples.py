"""Example viewer requests offered in the playground (built on the demo catalogue)."""

from __future__ import annotations

from typing import Any

EXAMPLES: dict[str, dict[str, Any]] = {
    "price": {
        "id": "playground-price",
        "comments": [{"user": "viewer_1", "text": "How much is product #3?"}],
        "room": {"current_link_id": 1, "shelf": [1, 2, 3, 4, 5]},
    },
    "chat": {
        "id": "playground-chat",
        "comments": [{"user": "viewer_2", "text": "Hi! Where are you streaming from today?"}],
        "room": {"current_link_id": 1, "shelf": [1, 2, 3, 4, 5]},
    },
    "aftersale": {
        "id": "playground-aftersale",
        "comments": [{"user": "viewer_3", "text": "My order arrived broken, can I return it?"}],
        "room": {"current_link_id": 2, "shelf": [1, 2, 3, 4, 5]},
    },
    "multi": {
        "id": "playground-multi",
        "mode": "multi",
        "comments": [
            {"user": "viewer_4", "text": "Is link 2 in stock?"},
            {"user": "viewer_5", "text": "Any discount today?"},
        ],
        "room": {"current_link_id": 2, "shelf": [1, 2, 3, 4, 5]},
    },
}


def example_request(*, name: str, comment: str | None = None) -> dict[str, Any]:
    """A copy of an example; `comment` replaces the first comment's text."""
    request = {**EXAMPLES[name], "comments": [dict(c) for c in EXAMPLES[name]["comments"]]}
    if comment:
        request["mode"] = "single"
        request["comments"] = [{"user": "viewer", "text": comment}]
    return request
