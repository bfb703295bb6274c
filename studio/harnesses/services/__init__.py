"""Writes for Harnesses, cut at their seams; import them from here.

``versions`` (content-addressed versions and bundle imports), ``labels``
(moves, promotion, rollback), ``drafts`` (the editor: saves, conflicts,
commits) and ``errors`` (what a user can get wrong). Every function is
keyword-only, validates through the Harness library and records an audit
event; errors a user can cause are StudioError subclasses whose message names
the file, field or object and what would be valid. Harness-format text (the
skill template, hook and rule insertion, name/id validation) is the library's:
``harness.text_edit``.
"""

from studio.harnesses.services.drafts import (
    SaveResult,
    draft_check_writable,
    draft_commit,
    draft_conflict_keep_theirs,
    draft_conflict_resolve,
    draft_create,
    draft_discard,
    draft_file_delete,
    draft_file_save,
    draft_files_store,
    draft_hook_add,
    draft_skill_add,
    problems_to_json,
)
from studio.harnesses.services.errors import DuplicateVersion, InvalidBundle, StudioError
from studio.harnesses.services.labels import label_check_permission, label_move, label_rollback
from studio.harnesses.services.versions import (
    ImportResult,
    blobs_store,
    harness_import,
    harness_import_zip,
    harness_version_create,
)

__all__ = [
    "DuplicateVersion",
    "ImportResult",
    "InvalidBundle",
    "SaveResult",
    "StudioError",
    "blobs_store",
    "draft_check_writable",
    "draft_commit",
    "draft_conflict_keep_theirs",
    "draft_conflict_resolve",
    "draft_create",
    "draft_discard",
    "draft_file_delete",
    "draft_file_save",
    "draft_files_store",
    "draft_hook_add",
    "draft_skill_add",
    "harness_import",
    "harness_import_zip",
    "harness_version_create",
    "label_check_permission",
    "label_move",
    "label_rollback",
    "problems_to_json",
]
