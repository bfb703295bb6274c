"""Studio test fixtures: the personas and eager jobs of tests/personas.py, the demo Harness."""

from __future__ import annotations

import pytest

from harness import demo_harness_dir, load_dir
from studio.harnesses.services import harness_import
from tests import personas as shared

# the shared fixtures, registered in this package
PASSWORD, Personas = shared.PASSWORD, shared.Personas
personas, fast_passwords, eager_jobs = shared.personas, shared.fast_passwords, shared.eager_jobs



@pytest.fixture(scope="session")
def demo_files() -> dict[str, str]:
    return dict(load_dir(demo_harness_dir()).files)


@pytest.fixture
def demo_version(personas, demo_files):
    """The demo Harness imported as v1 by the admin."""
    return harness_import(files=demo_files, author=personas.admin, message="demo").version
