"""Harness storage: file blobs by content hash, immutable versions, labels, drafts.

A version's files are a tree {path: sha256 of text}; the texts live once in
FileBlob however many versions share them, so 500 versions of a 200-skill
Harness cost one tree each plus the files that actually changed.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models


class Harness(models.Model):
    name = models.SlugField(
        max_length=64, unique=True, help_text="The manifest name, e.g. livestream-avatar."
    )
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


def text_sha256(text: str) -> str:
    """The address of a Harness file's text: the sha256 of its UTF-8 bytes (FileBlob's key; a
    version's tree, a draft's changes and a diff's too-large sides all use it)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class FileBlob(models.Model):
    """One file text, addressed by ``text_sha256``."""

    sha256 = models.CharField(max_length=64, primary_key=True)
    text = models.TextField()

    def __str__(self) -> str:
        return self.sha256[:12]


class HarnessVersion(models.Model):
    """An immutable snapshot; `digest` is the bundle digest (harness.Bundle.digest)."""

    harness = models.ForeignKey(Harness, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField(help_text="1, 2, 3... within the Harness.")
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    digest = models.CharField(max_length=64, db_index=True)
    tree = models.JSONField(help_text="{path: sha256 of the file's text}")
    message = models.TextField()
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    summary = models.JSONField(
        default=dict, help_text="Counts shown in lists: skills, tools, hooks."
    )
    parent_summary = models.JSONField(
        null=True,
        blank=True,
        help_text="What changed since the parent (harness.diff summary), computed at creation.",
    )

    class Meta:
        ordering = ["harness", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["harness", "number"], name="version_number_unique"),
            models.UniqueConstraint(fields=["harness", "digest"], name="version_digest_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.harness.name} v{self.number}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ValueError(f"{self} is immutable; make a new version instead")
        super().save(*args, **kwargs)


class Label(models.Model):
    """A movable name (production, staging, custom) pointing at one version."""

    PRODUCTION = "production"
    STAGING = "staging"

    harness = models.ForeignKey(Harness, on_delete=models.CASCADE, related_name="labels")
    name = models.SlugField(max_length=40)
    version = models.ForeignKey(HarnessVersion, on_delete=models.PROTECT, related_name="labels")
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["harness", "name"]
        constraints = [
            models.UniqueConstraint(fields=["harness", "name"], name="label_name_unique")
        ]

    def __str__(self) -> str:
        return f"{self.harness.name}@{self.name}"


class LabelMove(models.Model):
    """History of a label: every move, who made it and why."""

    label = models.ForeignKey(Label, on_delete=models.CASCADE, related_name="moves")
    from_version = models.ForeignKey(
        HarnessVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    to_version = models.ForeignKey(HarnessVersion, on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(
        max_length=16, choices=[("set", "set"), ("promote", "promote"), ("rollback", "rollback")]
    )
    reason = models.TextField(blank=True)
    moved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.label} {self.kind} to v{self.to_version.number}"


class Draft(models.Model):
    """A user's editable copy of a base version. `revision` guards concurrent saves."""

    OPEN = "open"
    COMMITTED = "committed"
    DISCARDED = "discarded"

    harness = models.ForeignKey(Harness, on_delete=models.CASCADE, related_name="drafts")
    base_version = models.ForeignKey(
        HarnessVersion, on_delete=models.PROTECT, related_name="drafts"
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="drafts"
    )
    title = models.CharField(max_length=200)
    files = models.JSONField(help_text="{path: text}: the whole bundle as edited")
    revision = models.PositiveIntegerField(default=1)
    problems = models.JSONField(default=list, help_text="Validation problems at the last save.")
    status = models.CharField(
        max_length=12,
        default=OPEN,
        choices=[(OPEN, "open"), (COMMITTED, "committed"), (DISCARDED, "discarded")],
    )
    committed_version = models.ForeignKey(
        HarnessVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return f"draft #{self.pk} {self.title}"


class DraftConflict(models.Model):
    """A save that lost the race: kept so the user's text is never lost."""

    draft = models.ForeignKey(Draft, on_delete=models.CASCADE, related_name="conflicts")
    path = models.CharField(max_length=255)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    base_revision = models.PositiveIntegerField(help_text="The revision the author was editing.")
    seen_revision = models.PositiveIntegerField(
        help_text="The draft's revision when the save arrived."
    )
    their_text = models.TextField(help_text="The file as saved by the other writer.")
    my_text = models.TextField(help_text="The author's text that was not saved.")
    resolved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"conflict #{self.pk} in draft #{self.draft_id} {self.path}"
