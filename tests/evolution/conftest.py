"""Evolution test fixtures: the studio personas, the demo Harness, a small seeded dataset.

The personas and eager jobs come from tests/personas.py.
"""

from __future__ import annotations

import pytest

from harness import demo_harness_dir, read_dir
from tests import artefacts
from tests import personas as shared

# the shared fixtures, registered in this package
PASSWORD, Personas = shared.PASSWORD, shared.Personas
personas, fast_passwords, eager_jobs = shared.personas, shared.fast_passwords, shared.eager_jobs
demo_files = shared.demo_files


@pytest.fixture(scope="session")
def demo_sets_dir(tmp_path_factory):
    """The seeded demo sets, generated once per test session."""
    return artefacts.world(tmp_path_factory, 7)


@pytest.fixture(scope="session")
def defect_files():
    """The demo Harness without the price grounding: item_qa's fetch-before-facts rule and the
    price-needs-tool and numbers-grounded hooks."""
    from evaluation.diagnosis.planted import without_price_grounding

    files, _ = read_dir(demo_harness_dir())
    return without_price_grounding(files)
