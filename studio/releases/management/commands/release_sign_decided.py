"""python manage.py release_sign_decided: sign the releases decided before signing moved to the
decision.

Run once after upgrading: each decided release with a decider and the audit event of its decision
gets its manifest signed and stored (downloads serve it); any other decided row stays unsigned, and
the launcher refuses it (docs/security.md, "Release manifests").
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Sign, once, the decided releases whose decision is "
        "on record but whose manifest was never stored signed."
    )

    def handle(self, *args, **options):
        from studio.releases.services import releases_sign_decided

        try:
            signed, skipped = releases_sign_decided()
        except ImproperlyConfigured as error:
            raise CommandError(str(error)) from None
        for line in skipped:
            self.stderr.write(line)
        self.stdout.write(
            f"signed {len(signed)} release(s)"
            + (f": {', '.join(f'#{n}' for n in signed)}" if signed else "")
        )
