"""Studio test fixtures: the personas, eager jobs and demo Harness of tests/personas.py."""

from __future__ import annotations

import pytest

from tests import personas as shared

# the shared fixtures, registered in this package
PASSWORD, Personas = shared.PASSWORD, shared.Personas
personas, fast_passwords, eager_jobs = shared.personas, shared.fast_passwords, shared.eager_jobs
demo_files, demo_version = shared.demo_files, shared.demo_version


@pytest.fixture
def runs_dir(settings, tmp_path):
    """TRAINING_RUNS_DIR in the test's own folder: the run folders the studio writes."""
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    return settings.TRAINING_RUNS_DIR
