"""Security test fixtures: the personas, eager jobs and demo Harness of tests/personas.py."""

from __future__ import annotations

from tests import personas as shared

# the shared fixtures, registered in this package
PASSWORD, Personas = shared.PASSWORD, shared.Personas
personas, fast_passwords, eager_jobs = shared.personas, shared.fast_passwords, shared.eager_jobs
demo_files, demo_version = shared.demo_files, shared.demo_version
