"""manage.py seed_evolution_demo: the generated demo case sets as datasets (the 482-case dev-set
among them) and the scripted-shortcut endpoint. Idempotent."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand

from studio.evolution.services.seeding import DEMO_SEED, DEMO_SETS, evolution_demo_seed


class Command(BaseCommand):
    help = "Generate the demo case sets (seeded) and import them as evolution datasets."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--seed", type=int, default=DEMO_SEED, help="world seed (default %(default)s)"
        )
        parser.add_argument(
            "--sets",
            nargs="+",
            choices=sorted(DEMO_SETS),
            default=sorted(DEMO_SETS),
            help="which sets to import (default: all)",
        )

    def handle(self, *args, seed: int, sets: list[str], **options) -> None:
        actor = User.objects.filter(is_superuser=True).order_by("pk").first()
        report = evolution_demo_seed(actor=actor, seed=seed, sets=tuple(sets))
        self.stdout.write(f"Case sets in {report.folder}")
        for name in report.imported:
            self.stdout.write(f"  imported dataset {name}")
        for name in report.present:
            self.stdout.write(f"  dataset {name} already present")
        if report.endpoint:
            self.stdout.write(
                f"Endpoint {report.endpoint.name}: scripted policy {report.endpoint.script_path}"
            )
        if report.planted:
            self.stdout.write(
                f"Planted-defect scenario: {report.planted.harness.name} v{report.planted.number} "
                "(label planted-defect, the price grounding removed; docs/evolution.md)"
            )
