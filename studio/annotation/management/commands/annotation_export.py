"""manage.py annotation_export: a queue's settled labels as a new export and its calibration file.

Writes ``--out FILE`` (e.g. ``data/calibration/human.jsonl``, the committed human set the studio's
calibration gate reads first: ``settings.JUDGE_CALIBRATION_FILE``): the hs-calibration/1 file of
docs/evaluation.md, every labelled reply with its case, every label (who, when), its origin, and its
part (dev or held-out) split once by case digest; a later export keeps the earlier parts. The
export is also a dataset ``<queue>-v<N>`` in the studio, as the queue page's Export makes it."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from studio.annotation.models import AnnotationQueue
from studio.annotation.services import AnnotationError, queue_export


class Command(BaseCommand):
    help = "Export a queue's settled labels and write its calibration file (hs-calibration/1)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--queue", required=True, help="the annotation queue")
        parser.add_argument(
            "--out", required=True, type=Path, help="the file, e.g. data/calibration/human.jsonl"
        )
        parser.add_argument("--as", dest="username", required=True, help="who exports (a user)")

    def handle(self, *args, queue: str, out: Path, username: str, **options) -> None:
        actor = User.objects.filter(username=username).first()
        if actor is None:
            raise CommandError(f"--as: no user {username!r}")
        found = AnnotationQueue.objects.filter(name=queue).first()
        if found is None:
            raise CommandError(f"--queue: no annotation queue {queue!r}")
        if out.exists() and out.is_dir():
            raise CommandError(f"--out: {out} is a folder; name the file to write")
        try:
            export = queue_export(queue=found, actor=actor)
        except AnnotationError as error:
            raise CommandError(str(error)) from None
        label_set = export.label_set
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(label_set.content, encoding="utf-8")
        parts = label_set.parts
        between = label_set.labeller_agreement
        self.stdout.write(
            f"{out}: {found.name} v{export.version}, {label_set.replies} labelled replies "
            f"(dev {parts.get('dev', 0)}, held-out {parts.get('heldout', 0)}); "
            + (
                f"{between['n']} labelled by two people: Accuracy kappa "
                f"{between['accuracy']['kappa']:.2f}, Effectiveness kappa "
                f"{between['effectiveness']['kappa']:.2f}"
                if between.get("n")
                else "none labelled by two people"
            )
        )
