"""Playground: run one request under a Harness version and a policy, as a job."""
