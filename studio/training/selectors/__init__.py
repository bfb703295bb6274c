"""Reads for training runs, one module per concern:

- ``runs``: the lookups, and the result a finished run left in its folder;
- ``metrics``: a run's metrics.jsonl files as columns (parsed once per change) and its progress;
- ``dashboard``: the curves the dashboard draws, kept per change, and the marks on them;
- ``registry``: the checkpoint registry and the MTP draft heads adapted to each checkpoint;
- ``comparison``: the ablation's table and the comparison of two checkpoints.

The views read them as ``selectors.<name>``: the names below are the package's public reads.
"""

from studio.training.selectors.comparison import (
    COMPARE_RESAMPLES,
    SetComparison,
    ablation_dashboard,
    ablation_data,
    ablation_progress,
    checkpoint_compare,
)
from studio.training.selectors.dashboard import (
    run_dashboard,
    run_dashboard_json,
    run_marks,
)
from studio.training.selectors.metrics import (
    Metrics,
    Progress,
    run_metrics,
    run_progress,
    stage_folders,
)
from studio.training.selectors.registry import (
    CheckpointEntry,
    DraftHeadEntry,
    checkpoint_choices,
    checkpoint_registry,
    draft_heads,
    head_for_checkpoint,
)
from studio.training.selectors.runs import read_folder_summary, run_get, run_list

__all__ = [
    "COMPARE_RESAMPLES",
    "CheckpointEntry",
    "DraftHeadEntry",
    "Metrics",
    "Progress",
    "SetComparison",
    "ablation_dashboard",
    "ablation_data",
    "ablation_progress",
    "checkpoint_choices",
    "checkpoint_compare",
    "checkpoint_registry",
    "draft_heads",
    "head_for_checkpoint",
    "read_folder_summary",
    "run_dashboard",
    "run_dashboard_json",
    "run_get",
    "run_list",
    "run_marks",
    "run_metrics",
    "run_progress",
    "stage_folders",
]
