"""Import a public Agent Skills folder, uploaded as a .zip, into a draft.

The studio side of :mod:`harness.skill_import`: the archive is read by
``files_from_zip`` (the bundle import's reader, with its limits), the
executable bits and links that ``{path: text}`` cannot show are read from the
archive's directory here, and the new skill's files join the draft in one save
(all of them or none), checked against the draft's revision like any save.
"""

from __future__ import annotations

import io
import stat
import zipfile
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction

from harness.bundle import path_problem
from harness.skill_import import (
    ImportedSkill,
    SkillImportError,
    executable_problem,
    link_problem,
    skill_import,
)
from studio.audit.services import audit_record
from studio.harnesses.bundles import BundleArchiveError, Problem, bundle_problems, files_from_zip
from studio.harnesses.models import Draft
from studio.harnesses.services import (
    InvalidBundle,
    StudioError,
    draft_check_writable,
    draft_files_store,
    problems_to_json,
)

ASK_KIND = "choose reply or strategy on this form and upload the .zip again"


@dataclass
class SkillImportResult:
    draft: Draft
    skill: ImportedSkill


def zip_mode_problems(data: bytes) -> list[Problem]:
    """Entries of the archive that are executable or links (Unix modes in the zip directory)."""
    try:
        infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return [Problem("(upload)", 0, "(zip)", "the upload is not a readable .zip file")]
    problems = []
    for info in infos:
        mode = info.external_attr >> 16
        if info.is_dir() or not mode:
            continue
        if stat.S_ISLNK(mode):
            problems.append(link_problem(info.filename))
        elif mode & 0o111:
            problems.append(executable_problem(info.filename, mode, where=" in the .zip"))
    return problems


def draft_skill_import(
    *, draft: Draft, data: bytes, kind: str | None, base_revision: int, actor: User, max_bytes: int
) -> SkillImportResult:
    """Add the skill in a .zip of a public Agent Skills folder to a draft.

    Raises InvalidBundle listing every problem of the skill's files (nothing is
    saved then), or StudioError for an unreadable .zip or a stale revision.
    """
    draft_check_writable(draft=draft, actor=actor)
    try:
        source = files_from_zip(data, max_bytes=max_bytes)
    except BundleArchiveError as error:
        raise StudioError(f"skill: {error}") from None
    problems = zip_mode_problems(data)
    with transaction.atomic():
        current = Draft.objects.select_for_update().get(pk=draft.pk)
        if current.revision != base_revision:
            raise StudioError("the draft changed since you opened it; reload it and import again")
        try:
            imported = skill_import(
                source, bundle_files=current.files, kind=kind, ask_kind=ASK_KIND
            )
        except SkillImportError as error:
            problems += error.problems
        else:  # the bundle path rule, as at every other door
            problems += [
                Problem(path, 0, "(file)", refused)
                for path in imported.files
                if (refused := path_problem(path))
            ]
        if problems:
            raise InvalidBundle(sorted(set(problems)))
        files = {**current.files, **imported.files}
        draft_files_store(
            draft=current,
            files=files,
            problems=problems_to_json(problems=bundle_problems(files)),
            actor=actor,
        )
    audit_record(
        actor=actor,
        action="draft.import_skill",
        harness=current.harness,
        target=f"draft #{current.pk} skills/{imported.name}/",
        data={"revision": current.revision, "kind": imported.kind, "files": sorted(imported.files)},
    )
    return SkillImportResult(draft=current, skill=imported)
