"""Write docs/errors.md from every app's enumeration of error codes (apps.core.codes)."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from apps.core.codes import document


class Command(BaseCommand):
    help = "Write docs/errors.md, the list of every stable error code."

    def handle(self, *args, **options):
        path = Path(settings.BASE_DIR) / "docs" / "errors.md"
        path.write_text(document())
        self.stdout.write(f"Wrote {path}")
