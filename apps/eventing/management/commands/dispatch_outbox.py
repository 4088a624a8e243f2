from django.core.management.base import BaseCommand

from apps.eventing import dispatcher, selectors


class Command(BaseCommand):
    help = "Drain the outbox to the streams now (what the dispatcher task does), and report."

    def handle(self, *args, **options):
        published = dispatcher.drain()
        backlog = selectors.outbox_backlog()
        oldest = backlog.oldest_age_seconds
        age = f", oldest {oldest:.1f}s" if oldest is not None else ""
        about = "about " if backlog.estimated else ""
        self.stdout.write(f"published {published}; {about}{backlog.waiting} waiting{age}")
