"""manage.py compatibility_fill: name the endpoints serving a Harness's labels and fill its matrix.

``--serve production=ENDPOINT`` (and ``staging=ENDPOINT``) names them as an ML engineer does on
/compatibility/; then every labelled version's cells are asked for as a label move asks for them,
the Celery workers score them, and ``--wait`` waits for them and prints each cell and the time it
took. Cells that exist for the same inputs are reused (the count of new runs is printed)."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from studio.compatibility import selectors
from studio.compatibility.services import CompatibilityError, cells_for_label, label_server_set
from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import EvalRun
from studio.harnesses.models import Harness


class Command(BaseCommand):
    help = (
        "Name the endpoints serving a Harness's labels and "
        "ask for its compatibility cells (workers score them)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--harness", default="", help="Harness name (default: the one with a production label)"
        )
        parser.add_argument(
            "--serve",
            action="append",
            default=[],
            metavar="LABEL=ENDPOINT",
            help="the endpoint serving a label, e.g. production=local (repeatable)",
        )
        parser.add_argument(
            "--wait",
            type=float,
            default=0,
            metavar="SECONDS",
            help="wait up to this long for the cells to finish and print them (0: do not wait)",
        )

    def handle(self, *args, harness: str, serve: list[str], wait: float, **options) -> None:
        found = (
            Harness.objects.filter(name=harness).first()
            if harness
            else Harness.objects.filter(labels__name="production").order_by("name").first()
        )
        if found is None:
            raise CommandError(
                f"--harness: no Harness {harness!r}"
                if harness
                else "--harness: no Harness has a production label (manage.py seed_demo sets one)"
            )
        started, before = time.monotonic(), EvalRun.objects.count()
        try:
            for item in serve:
                label, sep, name = item.partition("=")
                endpoint = ModelEndpoint.objects.filter(name=name).first()
                if not sep or endpoint is None:
                    names = ", ".join(ModelEndpoint.objects.values_list("name", flat=True))
                    raise CommandError(
                        f"--serve {item!r}: expected LABEL=ENDPOINT with an endpoint of {names}"
                    )
                label_server_set(harness=found, label=label, endpoint=endpoint, actor=None)
        except CompatibilityError as error:
            raise CommandError(str(error)) from None
        cells = []
        for label in sorted(selectors.labelled_versions(harness=found)):
            cells += [
                c for c in cells_for_label(harness_id=found.pk, label=label) if c not in cells
            ]
        if not cells:
            raise CommandError(
                "no cell to ask for: name the endpoint "
                f"serving {found.name}'s production or staging "
                "label with --serve, and check the compatibility set exists (seed_evolution_demo)"
            )
        self.stdout.write(
            f"{len(cells)} cell(s), {EvalRun.objects.count() - before} new evaluation run(s)"
        )
        deadline = started + wait
        while wait and time.monotonic() < deadline:
            runs = EvalRun.objects.filter(pk__in=[c.run_id for c in cells])
            if not runs.filter(status__in=(EvalRun.QUEUED, EvalRun.RUNNING)).exists():
                break
            time.sleep(2)
        for cell in cells:
            cell.run.refresh_from_db()
            figures = selectors.cell_figures(cell=cell)
            avg = figures.get("avg") or {}
            shown = (
                f"AVG {avg['mean']:.1f} [{avg['low']:.1f}, {avg['high']:.1f}], variants "
                f"{(figures.get('variants') or {}).get('overall', {}).get('avg', float('nan')):.1f}"
                if avg
                else cell.run.status
            )
            self.stdout.write(
                f"  {cell.endpoint.name} on {found.name} v{cell.version.number}: {shown} "
                f"(run #{cell.run_id}, {cell.run.wall_s:.1f} s scoring)"
            )
        if wait:
            self.stdout.write(f"waited {time.monotonic() - started:.1f} s")
