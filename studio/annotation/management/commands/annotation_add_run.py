"""manage.py annotation_add_run: put every reply of finished evaluation run folders into a queue.

``--run DIR`` (repeatable) names folders that ``python -m evaluation run ... --out DIR`` wrote; each
case's reply, route and full trajectory become an item with the case (its gold kept), the item's id
``<case>@<run folder>`` and its origin (run folder, policy, Harness). ``--queue NAME`` is created
when it does not exist. Run it from the folder the runs were started in (their run.json names the
case set by that path). Adding a run again adds nothing new."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from evaluation.calibration import RunFolderError, run_replies
from studio.annotation.models import AnnotationQueue
from studio.annotation.services import AnnotationError, queue_add_run_folder, queue_create


class Command(BaseCommand):
    help = "Put every reply of finished evaluation run folders into an annotation queue."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--queue", required=True, help="queue name (created if missing)")
        parser.add_argument(
            "--run",
            action="append",
            required=True,
            metavar="DIR",
            help="a finished 'python -m evaluation run --out DIR' folder (repeatable)",
        )
        parser.add_argument(
            "--as",
            dest="username",
            default="",
            help="the user the audit log names (default: the system)",
        )

    def handle(self, *args, queue: str, run: list[str], username: str, **options) -> None:
        actor = None
        if username:
            actor = User.objects.filter(username=username).first()
            if actor is None:
                raise CommandError(f"--as: no user {username!r}")
        try:
            folders = [run_replies(path) for path in run]  # every folder read before any write
        except RunFolderError as error:
            raise CommandError(f"--run: {error}") from None
        names = [f.name for f in folders]
        if len(set(names)) < len(names):
            raise CommandError(
                f"--run: two folders are named {max(names, key=names.count)!r}; their items "
                "would share ids: rename one"
            )
        try:
            with transaction.atomic():
                target = AnnotationQueue.objects.filter(name=queue.strip().lower()).first()
                if target is None:
                    target = queue_create(
                        name=queue,
                        actor=actor,
                        source="evaluation run folders",
                        description="Replies of evaluation runs, to be labelled by people.",
                    )
                lines = []
                for folder in folders:
                    added = queue_add_run_folder(queue=target, run=folder, actor=actor)
                    lines.append(
                        f"run {folder.name} ({folder.policy}, {folder.harness}): {added} "
                        f"repl{'y' if added == 1 else 'ies'} added"
                        + (
                            f", {len(folder.replies) - added} in the queue already"
                            if added < len(folder.replies)
                            else ""
                        )
                        + (f", {folder.crashed} crashed case(s) skipped" if folder.crashed else "")
                    )
        except AnnotationError as error:
            raise CommandError(str(error)) from None
        for line in lines:
            self.stdout.write(line)
        self.stdout.write(f"queue {target.name}: {target.items.count()} item(s)")
