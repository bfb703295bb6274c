"""Diagnosis of evaluation failures: clusters, root causes and validated Harness edits.

Pure library (no Django). ``failures_from_results`` reads scored cases,
``cluster_failures`` groups them by judge reason code and text similarity,
a diagnoser (``RuleBasedDiagnoser`` offline, ``LLMDiagnoser`` over an
OpenAI-compatible endpoint) proposes structured edits, and ``diagnose`` keeps
only proposals whose edits apply and validate through ``harness.load_mapping``.
"""

from evaluation.diagnosis.clustering import Cluster, cluster_failures
from evaluation.diagnosis.edits import EDIT_TYPES, Edit, EditError, apply_edits, edit_from_dict
from evaluation.diagnosis.llm import LLMDiagnoser
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
    "EDIT_TYPES", "Cluster", "Diagnoser", "Diagnosis", "Edit", "EditError", "FailureCase",
    "LLMDiagnoser", "Proposal", "RuleBasedDiagnoser", "apply_edits", "cause_family",
    "cluster_failures", "diagnose", "edit_from_dict", "failure_from_result",
    "failures_from_results", "is_failure", "validate_proposal",
]
