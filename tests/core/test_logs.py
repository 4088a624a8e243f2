"""JSON logs that follow a request into its tasks and consumers, with no secret in any
log line."""

import io
import json
import logging

import pytest
from celery.contrib.testing.worker import start_worker
from django.test import Client

from apps.core.context import request_id
from apps.core.logs import JsonFormatter, mask
from apps.core.models import ScheduledJob
from apps.core.outbox import emit
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import OutboxEvent
from portal.celery import app
from tests.factories import service_token
from tests.support import wait_for


@app.task(scope="system", name="tests.periodic_report")
def periodic_report():
    logging.getLogger("tests.report").info("reporting")
    emit(
        topic="tenancy.tenant",
        event_type="tenant.updated",
        aggregate_type="tenancy.tenant",
        aggregate_id="x",
        payload={},
    )


@pytest.mark.django_db(transaction=True)
def test_the_request_id_follows_into_the_task_its_log_lines_and_its_events():
    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("tests.report")
    logger.addHandler(handler)
    level, logger.level = logger.level, logging.INFO  # whatever the root's level is
    app.control.purge()  # nothing left over from another test's queue
    try:
        with start_worker(
            app,
            pool="solo",
            perform_ping_check=False,
            queues=["default", "periodic"],
            shutdown_timeout=30,
        ):
            token = request_id.set("req-abc123")
            try:
                periodic_report.delay()
            finally:
                request_id.reset(token)
            wait_for(
                lambda: ScheduledJob.objects.filter(
                    name="tests.periodic_report", last_succeeded_at__isnull=False
                ).exists(),
                timeout=30,
            )
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    [line] = [json.loads(x) for x in lines.getvalue().splitlines()]
    assert line["request_id"] == "req-abc123" and line["task"] == "tests.periodic_report"
    with system_scope():
        assert OutboxEvent.objects.get(event_type="tenant.updated").correlation_id == "req-abc123"
    # a periodic task's run is recorded under its name, for schedule monitoring
    job = ScheduledJob.objects.get(name="tests.periodic_report")
    assert job.last_succeeded_at is not None and job.last_duration_ms is not None


SECRETS = {
    "token": "stw_0a1b2c3d_Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA",
    "bearer": "Authorization: Bearer abcdefghijklmnopqrstuvwxyz",
    "url": "redis://:hunter2hunter2@cache:6379/0",
    "pair": "password=correct-horse-battery",
    "json": '{"secret": "s3cr3t-value"}',
}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_secrets_are_masked_in_any_log_line(name):
    text = SECRETS[name]
    masked = mask(f"calling with {text} now")
    for fragment in ("Zm9vYmFy", "abcdefghijklmnop", "hunter2", "correct-horse", "s3cr3t"):
        assert fragment not in masked
    assert "[redacted]" in masked


@pytest.mark.django_db
def test_no_token_or_password_reaches_the_logs_of_a_busy_request_path(caplog, api, operator):
    """Issue a token, call with it and with a bad one, sign in with a wrong password: the
    log lines written meanwhile, as formatted, contain neither."""
    caplog.set_level(logging.DEBUG)
    issued = service_token(name="noisy")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")
    api.get("/api/v1/whoami/")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}x")
    api.get("/api/v1/whoami/")
    Client().post("/login/", {"username": "op", "password": "wrong horse battery"})
    formatter = JsonFormatter()
    output = "\n".join(formatter.format(record) for record in caplog.records)
    assert caplog.records  # the path did log (SQL at DEBUG, the refusals)
    # The secret part follows "stw_<8 hex>_" and is URL-safe base64, which may itself hold
    # "_": split on the first two separators only, or a one-letter tail would be searched for.
    secret_part = issued.secret.split("_", 2)[2]
    assert len(secret_part) >= 32
    assert issued.secret not in output and secret_part not in output
    assert "wrong horse battery" not in output


@pytest.mark.django_db
def test_a_consumer_handles_an_event_under_its_correlation_id(tenant_a):
    from apps.eventing.consumers import Handler, handle_envelopes
    from apps.eventing.envelope import Envelope

    seen = []
    with tenant_scope(tenant_a):
        envelope = emit(
            topic="tenancy.tenant",
            event_type="tenant.updated",
            aggregate_type="tenancy.tenant",
            aggregate_id=str(tenant_a.pk),
            payload={},
            tenant=tenant_a,
            correlation_id="corr-42",
        )
    handler = Handler(
        consumer="tests.correlation", topics=None, func=lambda e: seen.append(request_id.get())
    )
    assert handle_envelopes(handler, [Envelope.from_dict(envelope.to_dict())]) == 1
    assert seen == ["corr-42"] and request_id.get() == ""
