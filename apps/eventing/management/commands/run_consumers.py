"""The consumers process: one runner thread per Steward consumer and webhook subscription."""

import logging
import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import DatabaseError, close_old_connections

from apps.core.metrics import serve_metrics
from apps.core.redis import REDIS_ERRORS
from apps.eventing import delivery_metrics, services
from apps.eventing.consumers import build_runners
from apps.registry.selectors import active_subscriptions

REFRESH_SECONDS = 10
RETRY_SECONDS = 1
logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Run Steward's stream consumers and webhook deliveries until stopped."

    def handle(self, *args, **options):
        stopping = threading.Event()

        def stop(signum, frame):
            stopping.set()

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        self.run(stopping)

    def run(self, stopping: threading.Event) -> None:
        metrics = None
        if settings.STEWARD_CONSUMERS_METRICS_ADDRESS:
            metrics = serve_metrics(settings.STEWARD_CONSUMERS_METRICS_ADDRESS)
            host = settings.STEWARD_CONSUMERS_METRICS_ADDRESS.rpartition(":")[0]
            self.stdout.write(f"metrics at http://{host}:{metrics.server_port}/metrics")
        try:
            self.run_runners(stopping)
        finally:
            if metrics is not None:
                metrics.shutdown()
                metrics.server_close()

    def run_runners(self, stopping: threading.Event) -> None:
        running: dict[tuple, tuple] = {}
        while not stopping.is_set():
            try:
                self.refresh(running)
            except (DatabaseError, *REDIS_ERRORS) as exc:
                # PostgreSQL or Redis restarting: the runner threads wait it out on
                # their own; this loop must too, or the whole process exits with them.
                logger.warning("consumers: cannot refresh the subscriptions (%s); retrying", exc)
                close_old_connections()
                stopping.wait(RETRY_SECONDS)
                continue
            close_old_connections()
            stopping.wait(REFRESH_SECONDS)
        for runner, _ in running.values():
            runner.stop.set()
        for _, thread in running.values():
            thread.join(timeout=15)

    def refresh(self, running: dict) -> None:
        """Pick up new or removed subscriptions without a restart."""
        services.sync_consumer_subscriptions()
        services.ensure_subscription_groups(active_subscriptions())
        wanted = {self._key(r): r for r in build_runners()}
        for key in list(running):
            if key not in wanted:
                runner, thread = running.pop(key)
                runner.stop.set()
        for key, runner in wanted.items():
            if key not in running:
                thread = threading.Thread(target=runner.run_forever, name=runner.group, daemon=True)
                thread.start()
                running[key] = (runner, thread)
                self.stdout.write(f"consuming {', '.join(runner.streams)} as {runner.group}")
        delivery_metrics.RUNNERS.set(len(running))

    @staticmethod
    def _key(runner) -> tuple:
        # A changed endpoint or secret reference replaces the runner, which would
        # otherwise keep delivering to what it was started with.
        config = tuple(sorted((s.pk, s.endpoint, s.secret_ref) for s in runner.subscriptions))
        return (runner.group, tuple(sorted(runner.streams)), config)
