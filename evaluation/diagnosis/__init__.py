"""Diagnosis of evaluation failures: clusters, root causes and validated Harness edits.

Pure library (no Django). ``failures_from_results`` reads scored cases,
``cluster_failures`` groups them by judge reason code and text similarity,
a diagnoser (``RuleBasedDiagnoser`` offline, ``LLMDiagnoser`` over an
OpenAI-compatible endpoint) proposes structured edits, and ``diagnose`` keeps
only proposals whose edits apply and validate through ``harness.load_mapping``.
The rule-based diagnoser keeps only edits that the failing trajectories back
(``evidence``) and says "the model, not the Harness" when no failing case used
a tool or a skill; ``replay_proposal`` scores a proposal's targeted cases
under its edits, so a reviewer reads "fixes N of M targeted cases (predicted)".
"""

from evaluation.diagnosis.clustering import Cluster, cluster_failures
from evaluation.diagnosis.edits import EDIT_TYPES, Edit, EditError, apply_edits, edit_from_dict
from evaluation.diagnosis.evidence import MODEL_NOT_HARNESS, edit_evidence, model_not_harness
from evaluation.diagnosis.llm import LLMDiagnoser
from evaluation.diagnosis.predicted_fixes import MAX_REPLAY_CASES, prediction_text, replay_proposal
from evaluation.diagnosis.proposals import (
    Diagnoser,
    Diagnosis,
    Proposal,
    diagnose,
    validate_proposal,
)
from evaluation.diagnosis.records import (
    FailureCase,
    failure_from_result,
    failures_from_results,
    is_failure,
)
from evaluation.diagnosis.rule_based import RuleBasedDiagnoser, cause_family

__all__ = [
    "EDIT_TYPES",
    "MAX_REPLAY_CASES",
    "MODEL_NOT_HARNESS",
    "edit_evidence",
    "model_not_harness",
    "prediction_text",
    "replay_proposal",
    "Cluster",
    "Diagnoser",
    "Diagnosis",
    "Edit",
    "EditError",
    "FailureCase",
    "LLMDiagnoser",
    "Proposal",
    "RuleBasedDiagnoser",
    "apply_edits",
    "cause_family",
    "cluster_failures",
    "diagnose",
    "edit_from_dict",
    "failure_from_result",
    "failures_from_results",
    "is_failure",
    "validate_proposal",
]
