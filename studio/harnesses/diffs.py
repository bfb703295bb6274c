"""Diffs between two sets of Harness files, for the diff and conflict pages.

Per-file unified diffs come from harness.diff; the side-by-side rows are laid out here with difflib,
on the files that changed (paths are compared by content hash first, so a 200-skill version pair
costs only its changed files). The change summary ("skills added, rules changed, constraints
changed") comes from the Harness library's diff_bundles, cached by the pair of bundle digests
because versions never change. Loading two 200-skill bundles takes a few hundred milliseconds, so a
version diff page renders its file diffs at once and fetches a summary it has not cached yet with a
second (htmx) request.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from django.core.cache import cache

from harness.diff import summarise, unified_file_diff
from studio.filecache import FileCache
from studio.harnesses.bundles import HarnessValidationError, bundle_load
from studio.harnesses.models import HarnessVersion, text_sha256
from studio.harnesses.selectors import blob_texts, version_files

CONTEXT_LINES = 3
# Bounds of one diff page (issue 50: two versions with one 128 KiB SKILL.md of random short lines
# took 40 s and 2.4 MB; difflib's matcher is quadratic in the worst case). A file is diffed when its
# two sides hold at most DIFF_MAX_FILE_LINES lines together and their product is at most
# DIFF_MAX_LINE_PAIRS (2,000 x 2,000 lines of random short lines: about 0.2 s on one core for both
# views' matching), while the page has diffed at most DIFF_MAX_PAGE_LINES lines (the worst such
# page, side by side, is about 1 MB); any other changed file is shown as "too large to show,
# download both" with both digests.
DIFF_MAX_FILE_LINES = 4_000
DIFF_MAX_LINE_PAIRS = 2_000 * 2_000
DIFF_MAX_PAGE_LINES = 10_000


@dataclass
class SideBySideRow:
    kind: str  # equal | replace | delete | insert | skip
    left_no: int | None = None
    left: str = ""
    right_no: int | None = None
    right: str = ""


@dataclass
class FileDiff:
    path: str
    status: str  # added | removed | changed
    unified: str
    rows: list[SideBySideRow]
    added: int = 0
    removed: int = 0
    # too large to diff on a page (DIFF_MAX_*): the page says so and gives both sides' sha256 and
    # line counts instead
    too_large: bool = False
    old_sha256: str = ""
    new_sha256: str = ""
    old_lines: int = 0
    new_lines: int = 0

    @property
    def unified_lines(self) -> list[tuple[str, str]]:
        """(css class, line) of the unified diff: hdr, add, del, hunk or "" (classified here once
        rather than by four template filters per line)."""
        return [(_line_class(line), line) for line in self.unified.splitlines()]


@dataclass
class ChangeSet:
    files: list[FileDiff]
    summary: list[str] = field(default_factory=list)
    summary_note: str = ""
    summary_pending: bool = False  # not computed yet: the page fetches it with htmx


def _line_class(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "hdr"
    if line.startswith(("+", "-")):
        return "add" if line[0] == "+" else "del"
    return "hunk" if line.startswith("@@") else ""


def side_by_side(old: str, new: str, *, context: int = CONTEXT_LINES) -> list[SideBySideRow]:
    """Aligned rows of the two texts, unchanged runs longer than 2*context folded into one 'skip'
    row."""
    a, b = old.splitlines(), new.splitlines()
    rows: list[SideBySideRow] = []
    opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            span = i2 - i1
            if span > 2 * context + 1:
                # context after the previous change and before the next one, none at the file's ends
                head = range(0, context) if index > 0 else range(0)
                tail = range(span - context, span) if index < len(opcodes) - 1 else range(0)
                for k in head:
                    rows.append(
                        SideBySideRow("equal", i1 + k + 1, a[i1 + k], j1 + k + 1, b[j1 + k])
                    )
                rows.append(
                    SideBySideRow("skip", left=f"{span - len(head) - len(tail)} unchanged lines")
                )
                for k in tail:
                    rows.append(
                        SideBySideRow("equal", i1 + k + 1, a[i1 + k], j1 + k + 1, b[j1 + k])
                    )
            else:
                for k in range(span):
                    rows.append(
                        SideBySideRow("equal", i1 + k + 1, a[i1 + k], j1 + k + 1, b[j1 + k])
                    )
        else:
            for k in range(max(i2 - i1, j2 - j1)):
                li, rj = i1 + k, j1 + k
                rows.append(
                    SideBySideRow(
                        tag if (li < i2 and rj < j2) else ("delete" if li < i2 else "insert"),
                        li + 1 if li < i2 else None,
                        a[li] if li < i2 else "",
                        rj + 1 if rj < j2 else None,
                        b[rj] if rj < j2 else "",
                    )
                )
    return rows


def _line_count(text: str | None) -> int:
    return len(text.splitlines()) if text else 0


def too_large_file(*, path: str, old: str | None, new: str | None) -> FileDiff:
    """A changed file the page does not diff: its status, both sides' line counts and digests."""
    status = "added" if old is None else "removed" if new is None else "changed"
    return FileDiff(
        path,
        status,
        "",
        [],
        too_large=True,
        old_sha256=text_sha256(old) if old is not None else "",
        new_sha256=text_sha256(new) if new is not None else "",
        old_lines=_line_count(old),
        new_lines=_line_count(new),
    )


def bounded_file_diffs(pairs: list[tuple[str, str | None, str | None]]) -> list[FileDiff]:
    """``file_diff`` of each (path, old, new) within the page's bounds (DIFF_MAX_*), in order; a
    file past them is ``too_large_file``."""
    diffs, budget = [], DIFF_MAX_PAGE_LINES
    for path, old, new in pairs:
        old_n, new_n = _line_count(old), _line_count(new)
        fits = (
            old_n + new_n <= min(DIFF_MAX_FILE_LINES, budget)
            and old_n * new_n <= DIFF_MAX_LINE_PAIRS
        )
        if fits:
            budget -= old_n + new_n
            diffs.append(file_diff(path=path, old=old, new=new))
        else:
            diffs.append(too_large_file(path=path, old=old, new=new))
    return diffs


def file_diff(*, path: str, old: str | None, new: str | None) -> FileDiff:
    status = "added" if old is None else "removed" if new is None else "changed"
    old_text, new_text = old or "", new or ""
    unified = unified_file_diff(path, old, new)
    lines = unified.splitlines()
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    return FileDiff(path, status, unified, side_by_side(old_text, new_text), added, removed)


def changed_paths(old_tree: dict[str, str], new_tree: dict[str, str]) -> list[str]:
    return sorted(p for p in set(old_tree) | set(new_tree) if old_tree.get(p) != new_tree.get(p))


def _summary(old_files: dict[str, str], new_files: dict[str, str]) -> tuple[list[str], str]:
    try:
        old_bundle, new_bundle = bundle_load(old_files), bundle_load(new_files)
    except HarnessValidationError as error:
        return (
            [],
            f"no change summary while the files have {len(error.problems)} validation problem(s)",
        )
    return list(summarise(old_bundle, new_bundle)), ""


_BUNDLES = FileCache(
    "bundles", alias="local"
)  # loaded bundles by digest (a version's files never change)


def bundle_remember(bundle) -> None:
    """Keep a loaded bundle in the small in-process cache (keyed by its digest)."""
    _BUNDLES.put(bundle.digest, bundle)


def _version_bundle(version: HarnessVersion):
    """The loaded bundle of a version, from the cache when it is there."""
    return _BUNDLES.get_or_compute(
        version.digest, lambda: bundle_load(version_files(version=version))
    )


def summary_against_parent(*, parent: HarnessVersion, bundle) -> list[str]:
    """The change summary from `parent` to a freshly loaded bundle (stored on the new version)."""
    bundle_remember(bundle)
    return list(summarise(_version_bundle(parent), bundle))


def _summary_key(old: HarnessVersion, new: HarnessVersion) -> str:
    return f"harness-diff-summary:{old.digest}:{new.digest}"


def version_summary_cached(*, old: HarnessVersion, new: HarnessVersion) -> list[str] | None:
    """The change summary if it was computed before, else None (the page then loads it lazily)."""
    if old.digest == new.digest:
        return []
    if new.parent_id == old.pk and new.parent_summary is not None:
        return new.parent_summary
    return cache.get(_summary_key(old, new))


def version_summary(*, old: HarnessVersion, new: HarnessVersion) -> list[str]:
    """The library's change summary between two versions (cached: versions are immutable)."""
    summary = version_summary_cached(old=old, new=new)
    if summary is None:
        summary = list(summarise(_version_bundle(old), _version_bundle(new)))
        cache.set(_summary_key(old, new), summary, timeout=None)
    return summary


def version_diff(*, old: HarnessVersion, new: HarnessVersion) -> ChangeSet:
    """Per-file diffs and the change summary from `old` to `new`."""
    paths = changed_paths(old.tree, new.tree)
    texts = blob_texts(shas=[t[p] for t in (old.tree, new.tree) for p in paths if p in t])
    files = bounded_file_diffs(
        [
            (
                p,
                texts[old.tree[p]] if p in old.tree else None,
                texts[new.tree[p]] if p in new.tree else None,
            )
            for p in paths
        ]
    )
    summary = version_summary_cached(old=old, new=new)
    return ChangeSet(files=files, summary=summary or [], summary_pending=summary is None)


def files_diff(*, old_files: dict[str, str], new_files: dict[str, str]) -> ChangeSet:
    """Per-file diffs and summary between two {path: text} mappings (e.g. a draft and its base)."""
    old_tree = {p: text_sha256(t) for p, t in old_files.items()}
    new_tree = {p: text_sha256(t) for p, t in new_files.items()}
    files = bounded_file_diffs(
        [(p, old_files.get(p), new_files.get(p)) for p in changed_paths(old_tree, new_tree)]
    )
    summary, note = _summary(old_files, new_files) if files else ([], "")
    return ChangeSet(files=files, summary=summary, summary_note=note)
