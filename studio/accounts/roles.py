"""Roles (Django groups) and the one table saying which role may do what.

Every view names one permission from PERMISSIONS; `user_can` answers it. A
superuser counts as an admin. A signed-in user with no role (an "outsider")
can do nothing but sign out.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User

OPERATOR = "operator"
REVIEWER = "reviewer"
ML_ENGINEER = "ml_engineer"
ADMIN = "admin"
# a labeller (docs/evaluation.md, "Labelling guide"): reads what every role reads and labels replies
# in annotation queues; runs nothing that takes a worker's time
ANNOTATOR = "annotator"
ROLES = (OPERATOR, REVIEWER, ML_ENGINEER, ADMIN, ANNOTATOR)
# How a sentence names someone holding each role.
ROLE_NAMES = {
    OPERATOR: "an operator",
    REVIEWER: "a reviewer",
    ML_ENGINEER: "an ML engineer",
    ADMIN: "an admin",
    ANNOTATOR: "an annotator",
}

_ALL = frozenset(ROLES)
# the roles that work on Harnesses and models (every role but the annotator)
_STAFF = frozenset({OPERATOR, REVIEWER, ML_ENGINEER, ADMIN})

PERMISSIONS: dict[str, frozenset[str]] = {
    # reading Harnesses, versions, diffs, labels, history, jobs, endpoints
    "studio.view": _ALL,
    # creating Harnesses, importing bundles, drafts, editing, committing
    "harness.edit": frozenset({OPERATOR, ADMIN}),
    # moving a label other than production (staging, custom)
    "label.move": frozenset({OPERATOR, REVIEWER, ADMIN}),
    # moving the production label (promote or roll back)
    "label.production": frozenset({REVIEWER, ADMIN}),
    # adding, editing and testing model endpoints
    "endpoint.manage": frozenset({ML_ENGINEER, ADMIN}),
    # registering the secrets (API keys) endpoints may send, which endpoints then name
    "endpoint_secret.manage": frozenset({ADMIN}),
    # running a request in the playground
    "playground.run": _STAFF,
    # starting the worker check job
    "job.diagnose": frozenset({ML_ENGINEER, ADMIN}),
    # cancelling anyone's job (everyone may cancel the jobs they started)
    "job.cancel_any": frozenset({ADMIN}),
    # registering, editing and removing the MCP servers a Harness may name (they run on the workers)
    "mcp.manage": frozenset({ADMIN}),
    # reading the audit log
    "audit.view": _ALL,
    # evolution loop: datasets, evolutions, runs, diagnoses, reports
    "evolution.view": _ALL,
    # importing datasets, starting evolutions, runs, resumes and diagnoses
    "evolution.run": _STAFF,
    # accepting / rejecting proposals, committing the candidate, decisions
    "evolution.review": frozenset({REVIEWER, ADMIN}),
    # opening a proposal in the editor (a draft the operator refines)
    "evolution.edit": frozenset({OPERATOR, ADMIN}),
    # training, evaluation and replay runs: their list, pages, dashboards and the checkpoint
    # registry
    "training.view": _ALL,
    # starting, resuming and cancelling (anyone's) training, checkpoint evaluation, MTP, ablation
    # and replay runs
    "training.run": frozenset({ML_ENGINEER, ADMIN}),
    # releases: reading them and their gates, downloading a manifest
    "release.view": _ALL,
    # drafting a release (checkpoint + draft head + Harness version) and refreshing its gates
    "release.create": frozenset({ML_ENGINEER, ADMIN}),
    # approving or rejecting a release
    "release.approve": frozenset({REVIEWER, ADMIN}),
    # the checkpoint x Harness-version compatibility matrix, its cells and the retrain alarm
    "compatibility.view": _ALL,
    # asking for a cell (an evaluation run of a model on a version): the operator before a
    # promotion, the ML engineer for a checkpoint; a reviewer reads the cells a gate shows
    "compatibility.request": frozenset({OPERATOR, ML_ENGINEER, ADMIN}),
    # production traffic: the trajectories deployments posted, their filters, annotation queues and
    # calibrations
    "traffic.view": _ALL,
    # registering a deployment and making or revoking the API tokens it posts its trajectories with
    "traffic.deploy": frozenset({OPERATOR, ML_ENGINEER, ADMIN}),
    # labelling cases in an annotation queue, feeding queues and exporting a labelled set as a
    # dataset: the annotators hired for it, and the operators and reviewers who watch the live
    # room (two labellers and a third to settle a dispute, docs/studio.md)
    "annotation.label": frozenset({ANNOTATOR, OPERATOR, REVIEWER, ADMIN}),
    # measuring a judge against a labelled set
    "judge.calibrate": frozenset({REVIEWER, ML_ENGINEER, ADMIN}),
    # retiring a calibration (the gates then read the judge's next newest one)
    "judge.retire": frozenset({ADMIN}),
}


def user_roles(user: User | AnonymousUser) -> frozenset[str]:
    """The roles a user holds (cached on the user object for the request)."""
    if not user.is_authenticated:
        return frozenset()
    cached = getattr(user, "_studio_roles", None)
    if cached is not None:
        return cached
    names = set(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
    if user.is_superuser:
        names.add(ADMIN)
    roles = frozenset(names)
    user._studio_roles = roles
    return roles


def user_can(user: User | AnonymousUser, permission: str) -> bool:
    """Whether the user may do what `permission` names (a key of PERMISSIONS)."""
    if permission not in PERMISSIONS:
        raise KeyError(
            f"unknown permission {permission!r}; known: {', '.join(sorted(PERMISSIONS))}"
        )
    return bool(user_roles(user) & PERMISSIONS[permission])
