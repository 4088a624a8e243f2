from django.core.management.base import BaseCommand

from apps.core.setup import run_setup


class Command(BaseCommand):
    help = (
        "Install reference data and default schedules (and, with --demo, demo data) idempotently."
    )

    def add_arguments(self, parser):
        parser.add_argument("--demo", action="store_true", help="also load demo data, once")

    def handle(self, *args, demo: bool, **options):
        report = run_setup(demo=demo)
        for line in report.created:
            self.stdout.write(f"created {line}")
        for line in report.secrets:
            self.stdout.write(self.style.WARNING(line + "  (shown once)"))
        if not report.created:
            self.stdout.write("everything was in place already")
