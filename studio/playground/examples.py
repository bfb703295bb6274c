"""The example viewer requests the playground offers: the project's ``examples/requests``.

One request per intent of docs/architecture.md §2 (on the demo catalogue), each with its gold
script in ``examples/requests/scripts/`` (the runtime tests run every one under
the demo Harness). A scripted endpoint answers these examples with those
scripts, so any endpoint can run them in the playground.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from django.conf import settings

DEFAULT_EXAMPLE = "product_price"


def examples_dir() -> Path:
    return Path(settings.BASE_DIR) / "examples" / "requests"


@functools.cache
def _load() -> tuple[dict[str, dict[str, Any]], dict[str, list[Any]]]:
    folder = examples_dir()
    examples, scripts = {}, {}
    for path in sorted(folder.glob("*.json")):
        request = json.loads(path.read_text(encoding="utf-8"))
        examples[path.stem] = request
        script = folder / "scripts" / path.name
        if script.is_file():
            scripts[request["id"]] = json.loads(script.read_text(encoding="utf-8"))
    return examples, scripts


def examples() -> dict[str, dict[str, Any]]:
    """Example name (the file's stem, e.g. product_price) -> its request."""
    return _load()[0]


def example_scripts() -> dict[str, list[Any]]:
    """Example request id -> the gold script's outputs (the ScriptedPolicy format)."""
    return _load()[1]


def example_request(*, name: str) -> dict[str, Any]:
    """A copy of the example called ``name`` (the default example for an unknown name)."""
    known = examples()
    return json.loads(json.dumps(known.get(name) or known[DEFAULT_EXAMPLE]))
