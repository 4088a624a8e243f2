"""The retention API: who may do what, refusals with stable codes that change nothing,
the preview, the sweeps, and lists whose query count stays put."""

from datetime import date, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from apps.core.context import Actor
from apps.core.scope import system_scope
from apps.governance.models import GovernanceTask, LegalHold, RetentionRule, RetentionSweep
from apps.governance.orders import services as governance
from apps.governance.retention import services
from tests.conftest import bearer
from tests.factories import member, service_token
from tests.governance.factories import live_binding, owner

pytestmark = pytest.mark.django_db


RULES = "/api/v1/governance/retention/rules/"


HOLDS = "/api/v1/governance/retention/holds/"


PREVIEW = "/api/v1/governance/retention/preview/"


SWEEPS = "/api/v1/governance/retention/sweeps/"


def logged_in(user):
    client = APIClient()
    client.force_login(user)
    return client


def test_operators_manage_rules_and_a_locked_rule_refuses_shortening(operator, personal, store):
    api = logged_in(operator)
    created = api.post(
        RULES,
        {"name": "personal", "data_class": "personal", "period_days": 90, "action": "delete"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="rule-1",
    )
    assert created.status_code == 201, created.content
    url = f"{RULES}{created.json()['id']}/"
    locked = api.patch(url, {"locked": True, "period_days": 120}, format="json")
    assert locked.status_code == 200 and locked.json()["locked"]
    shorter = api.patch(url, {"period_days": 30}, format="json")
    assert shorter.status_code == 409
    assert shorter["content-type"] == "application/problem+json"
    assert shorter.json()["code"] == "retention_rule_locked"
    assert shorter.json()["refused"] == ["period_days"]
    assert api.patch(url, {"enabled": False}, format="json").json()["refused"] == ["enabled"]
    assert api.delete(url).json()["code"] == "retention_rule_locked"
    assert RetentionRule.objects.get().period_days == 120  # nothing changed
    assert api.patch(url, {"period_days": 365}, format="json").json()["period_days"] == 365


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"name": "x", "period_days": 30, "action": "delete"}, "scope_required"),
        ({"name": "x", "data_class": "personal", "period_days": 0, "action": "delete"}, "invalid"),
        ({"name": "x", "data_class": "nope", "period_days": 30, "action": "delete"}, "invalid"),
        ({"name": "x", "data_class": "personal", "period_days": 3, "action": "x"}, "invalid"),
        (
            {
                "name": "x",
                "store": "knowledge-sql",
                "data_class": "telemetry",
                "period_days": 3,
                "action": "delete",
            },
            "scope_mismatch",
        ),
        (
            {
                "name": "x",
                "data_class": "personal",
                "period_days": 3,
                "action": "delete",
                "colour": "red",
            },
            "invalid",
        ),
    ],
)
def test_bad_rules_get_a_clear_error_and_change_nothing(
    operator, personal, telemetry, store, body, code
):
    answer = logged_in(operator).post(RULES, body, format="json")
    assert answer.status_code == 400 and answer.json()["code"] == code, answer.json()
    assert not RetentionRule.objects.exists()


def test_tenant_callers_read_rules_but_do_not_write_them(tenant_a, admin_a, personal):
    api = logged_in(admin_a)
    assert api.get(RULES).status_code == 200
    body = {"name": "x", "data_class": "personal", "period_days": 3, "action": "delete"}
    assert api.post(RULES, body, format="json").status_code == 403
    assert api.get(PREVIEW).status_code == 403
    assert api.get(SWEEPS).status_code == 403
    token = bearer(APIClient(), service_token(tenant=tenant_a, scopes=["governance:write"]))
    assert token.post(RULES, body, format="json").status_code == 403
    assert not RetentionRule.objects.exists()


def test_a_tenants_admin_holds_and_releases_their_own_data_only(
    tenant_a, tenant_b, admin_a, operator, store
):
    api = logged_in(admin_a)
    placed = api.post(HOLDS, {"store": "knowledge-sql", "reason": "subpoena"}, format="json")
    assert placed.status_code == 201, placed.content
    assert placed.json()["tenant"] == "alpha" and placed.json()["scope"] == "store knowledge-sql"
    mine = placed.json()["id"]
    # naming another tenant is refused; no reason is refused; nothing is written
    other = api.post(HOLDS, {"tenant": "bravo", "reason": "x"}, format="json")
    assert other.status_code == 400 and other.json()["code"] == "tenant_mismatch"
    empty = api.post(HOLDS, {"reason": " "}, format="json")
    assert empty.json()["code"] == "reason_required"
    # the operator holds bravo; alpha's admin neither sees nor releases it
    theirs = (
        logged_in(operator)
        .post(HOLDS, {"tenant": "bravo", "reason": "regulator"}, format="json")
        .json()["id"]
    )
    assert [h["id"] for h in api.get(HOLDS).json()["results"]] == [mine]
    assert api.post(f"{HOLDS}{theirs}/release/", {"reason": "x"}, format="json").status_code == 404
    assert len(logged_in(operator).get(HOLDS).json()["results"]) == 2
    # a plain member may not hold at all
    plain = logged_in(member(tenant_a, username="plain"))
    assert plain.post(HOLDS, {"reason": "x"}, format="json").status_code == 403
    no_reason = api.post(f"{HOLDS}{mine}/release/", {"reason": ""}, format="json")
    assert no_reason.json()["code"] == "reason_required"
    released = api.post(f"{HOLDS}{mine}/release/", {"reason": "case closed"}, format="json")
    assert released.status_code == 200 and released.json()["active"] is False
    again = api.post(f"{HOLDS}{mine}/release/", {"reason": "again"}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "hold_released"
    with system_scope():
        assert LegalHold.objects.filter(released_at__isnull=True).count() == 1


def test_the_preview_shows_tonight_and_changes_nothing(
    operator, tenant_a, tenant_b, store, profile, personal
):
    op = Actor(user=operator)
    live_binding(tenant_a, store, profile)
    live_binding(tenant_b, store, profile)
    services.rule_create(actor=op, name="p", data_class=personal, period_days=90, action="redact")
    services.hold_place(actor=op, tenant=tenant_b, reason="litigation")
    preview = logged_in(operator).get(PREVIEW).json()
    assert [(p["tenant"], p["store"], p["owner"], p["action"]) for p in preview["purges"]] == [
        ("alpha", "knowledge-sql", "knowledge", "redact")
    ]
    assert [(h["tenant"], h["holds"][0]["reason"]) for h in preview["held"]] == [
        ("bravo", "litigation")
    ]
    assert "eventing.InboxEntry" in {t["table"] for t in preview["own_tables"]}
    assert preview["schedule"]["crontab"]
    with system_scope():
        assert not GovernanceTask.objects.exists()
    # the sweep then issues what the preview showed, and its record is listed
    services.sweep_run()
    sweeps = logged_in(operator).get(SWEEPS).json()["results"]
    assert sweeps[0]["status"] == "succeeded"
    assert sweeps[0]["results"]["purge_tasks"]["issued"] == 1
    assert sweeps[0]["purge_tasks_now"] == {"issued": 1}
    # the owner's receipt settles it, and the sweep shows it
    with system_scope():
        task = GovernanceTask.objects.get()
    receipt = {"items": [{"what": "documents", "action": "redacted", "count": 12}]}
    governance.owner_task_complete(actor=owner("knowledge"), task_id=task.pk, receipt=receipt)
    sweeps = logged_in(operator).get(SWEEPS).json()["results"]
    assert sweeps[0]["purge_tasks_now"] == {"completed": 1}


def test_the_api_lists_query_count_does_not_grow(operator, tenant_a, personal):
    api = logged_in(operator)
    op = Actor(user=operator)

    def count(url):
        with CaptureQueriesContext(connection) as ctx:
            assert api.get(url).status_code == 200
        return len(ctx.captured_queries)

    def add(i):
        services.hold_place(actor=op, tenant=tenant_a, reason=f"h{i}")
        services.rule_create(
            actor=op, name=f"r{i}", data_class=personal, period_days=i + 1, action="delete"
        )
        RetentionSweep.objects.create(
            night=date(2026, 1, 1) + timedelta(days=i), as_of=timezone.now(), status="succeeded"
        )

    add(0)
    count(RULES)  # the caller's first request fills the auth cache
    few = {url: count(url) for url in (RULES, HOLDS, SWEEPS)}
    for i in range(1, 6):
        add(i)
    assert {url: count(url) for url in (RULES, HOLDS, SWEEPS)} == few
