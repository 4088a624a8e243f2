"""Reference data, default schedules and demo data, installed idempotently.

Everything runs in one transaction behind a PostgreSQL advisory lock, so two
processes running the set-up at the same moment (two containers starting, say)
take turns, and the second finds everything in place and creates nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection, transaction
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from apps.core.context import SYSTEM_ACTOR
from apps.tenancy import services
from apps.tenancy.models import DataClass, Membership, Region, Tenant, User

SETUP_LOCK = 7_246_001  # arbitrary, fixed: the advisory lock key of the set-up

REGIONS = [
    ("israelcentral", "Israel Central", "IL"),
    ("westeurope", "West Europe", "EU"),
    ("northeurope", "North Europe", "EU"),
    ("eastus", "East US", "US"),
]
DATA_CLASSES = [
    ("public", "Public", "public"),
    ("operational", "Operational metadata", "internal"),
    ("customer-content", "Customer content", "confidential"),
    ("personal", "Personal data", "restricted"),
]
# (task, every, period, queue); each periodic task guards itself against double firing.
SCHEDULES = [
    ("core.periodic_purge_idempotency_records", 1, IntervalSchedule.HOURS, "periodic"),
    # The dispatcher is kicked on commit; this sweep only catches lost kicks and lanes
    # whose back-off has passed, so a few seconds is plenty.
    ("eventing.periodic_sweep_outbox", 5, IntervalSchedule.SECONDS, "periodic"),
    ("eventing.periodic_reconcile_effects", 30, IntervalSchedule.SECONDS, "periodic"),
    ("eventing.periodic_purge_inbox", 1, IntervalSchedule.HOURS, "periodic"),
    ("eventing.periodic_trim_streams", 1, IntervalSchedule.MINUTES, "periodic"),
    ("eventing.periodic_redeliver_replays", 30, IntervalSchedule.SECONDS, "periodic"),
    # Kicked when a batch turns terminal; this sweep only catches lost kicks.
    ("compute.periodic_poll_batch_links", 5, IntervalSchedule.SECONDS, "periodic"),
    ("compute.periodic_resolve_orphan_links", 1, IntervalSchedule.HOURS, "periodic"),
    # Bindings whose provisioning or revocation was lost or failed go again.
    ("stores.periodic_resume_bindings", 1, IntervalSchedule.MINUTES, "periodic"),
    # Kicked when a callback is recorded; this sweep only catches lost kicks.
    ("assets.periodic_apply_workflow_callbacks", 5, IntervalSchedule.SECONDS, "periodic"),
    # Delegations whose task died with a worker, or never reached the broker, go again.
    ("assets.periodic_resume_delegations", 1, IntervalSchedule.MINUTES, "periodic"),
    # Starts deletions whose cooling-off has passed and flags overdue governance tasks.
    ("governance.periodic_advance_orders", 1, IntervalSchedule.MINUTES, "periodic"),
]
# Installed disabled: an operator turns them on (console or admin) when wanted.
OPT_IN_SCHEDULES = [
    ("assets.periodic_reconcile_workflows", 15, IntervalSchedule.MINUTES, "periodic"),
]
# (task, the setting holding its crontab line, queue): jobs that run at a time of day.
CRONTAB_SCHEDULES = [
    ("governance.periodic_retention_sweep", "STEWARD_RETENTION_SWEEP_CRONTAB", "periodic"),
]
DEMO_PASSWORD = "steward-demo"  # noqa: S105 - documented demo login, development only


@dataclass
class SetupReport:
    created: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)


def install_reference_data(report: SetupReport) -> None:
    from apps.registry.catalog import install_steward_topics

    report.created += [f"topic {name}" for name in install_steward_topics()]
    for slug, name, jurisdiction in REGIONS:
        _, created = Region.objects.get_or_create(
            slug=slug, defaults={"name": name, "jurisdiction": jurisdiction}
        )
        if created:
            report.created.append(f"region {slug}")
    for slug, name, sensitivity in DATA_CLASSES:
        _, created = DataClass.objects.get_or_create(
            slug=slug, defaults={"name": name, "sensitivity": sensitivity}
        )
        if created:
            report.created.append(f"data class {slug}")


def install_consumers(report: SetupReport) -> None:
    from apps.eventing.consumers import ensure_subscription_groups, sync_consumer_subscriptions

    subscriptions = sync_consumer_subscriptions()
    try:
        ensure_subscription_groups(subscriptions)
    except Exception as exc:  # noqa: BLE001 - run_consumers creates them too, when Redis is back
        report.created.append(f"(consumer groups not created yet: {exc})")


def install_schedules(report: SetupReport) -> None:
    schedules = [(*s, True) for s in SCHEDULES] + [(*s, False) for s in OPT_IN_SCHEDULES]
    for task, every, period, queue, enabled in schedules:
        interval, _ = IntervalSchedule.objects.get_or_create(every=every, period=period)
        _install(report, task, queue, enabled, interval=interval)
    for task, setting, queue in CRONTAB_SCHEDULES:
        minute, hour, day_of_month, month_of_year, day_of_week = crontab_fields(
            getattr(settings, setting), setting
        )
        crontab, _ = CrontabSchedule.objects.get_or_create(
            minute=minute,
            hour=hour,
            day_of_month=day_of_month,
            month_of_year=month_of_year,
            day_of_week=day_of_week,
            timezone="UTC",
        )
        _install(report, task, queue, True, f" ({getattr(settings, setting)})", crontab=crontab)


def _install(report, task: str, queue: str, enabled: bool, note: str = "", **when) -> None:
    # Created once: an operator's later change in the console or admin is kept.
    _, created = PeriodicTask.objects.get_or_create(
        name=task,
        defaults={"task": task, "queue": queue, "kwargs": json.dumps({}), "enabled": enabled}
        | when,
    )
    if created:
        report.created.append(f"schedule {task}{note}")


def crontab_fields(line: str, setting: str) -> list[str]:
    """The five fields of a crontab line; a malformed line stops the set-up, naming it."""
    from celery.schedules import crontab
    from django.core.exceptions import ImproperlyConfigured

    fields = (line or "").split()
    problem = "" if len(fields) == 5 else "it has not five fields"
    if not problem:
        try:
            minute, hour, day_of_month, month_of_year, day_of_week = fields
            crontab(
                minute=minute,
                hour=hour,
                day_of_month=day_of_month,
                month_of_year=month_of_year,
                day_of_week=day_of_week,
            )
        except ValueError as exc:
            problem = str(exc)
    if problem:
        raise ImproperlyConfigured(
            f"{setting} must be a crontab line (minute hour day-of-month month "
            f"day-of-week), and {line!r} is not: {problem}."
        )
    return fields


def install_demo_data(report: SetupReport) -> None:
    if User.objects.filter(username="operator").exists():
        return  # demo data is loaded once; later runs keep what operators changed
    actor = SYSTEM_ACTOR
    # the demo operator may also use the Django admin
    services.user_create(
        actor=actor,
        username="operator",
        password=DEMO_PASSWORD,
        is_operator=True,
        is_superuser=True,
    )
    acme = services.tenant_create(
        actor=actor,
        slug="acme",
        name="Acme Corporation",
        home_region=Region.objects.get(slug="israelcentral"),
        environment_class=Tenant.EnvironmentClass.PRODUCTION,
    )
    globex = services.tenant_create(
        actor=actor,
        slug="globex",
        name="Globex",
        home_region=Region.objects.get(slug="westeurope"),
    )
    admin = services.user_create(actor=actor, username="acme-admin", password=DEMO_PASSWORD)
    services.membership_set(actor=actor, tenant=acme, user=admin, role=Membership.Role.ADMIN)
    member = services.user_create(actor=actor, username="globex-member", password=DEMO_PASSWORD)
    services.membership_set(actor=actor, tenant=globex, user=member, role=Membership.Role.MEMBER)
    account = services.service_account_create(
        actor=actor, name="release-pipeline", description="Demo platform service"
    )
    issued = services.api_token_issue(
        actor=actor,
        service_account=account,
        name="demo",
        scopes=["tenancy:read", "tenancy:write"],
    )
    from apps.compute.services import batch_set_status, batch_submit

    for step, final in (("train-model", "succeeded"), ("score-batch", None)):
        batch, _ = batch_submit(
            actor=actor,
            tenant=acme,
            idempotency_key=f"demo-{step}",
            workflow_instance_id="demo-workflow-1",
            workflow_step_id=step,
        )
        batch_set_status(actor=actor, batch=batch, status="running")
        if final:
            batch_set_status(actor=actor, batch=batch, status=final, result_summary={"rows": 1200})
    from apps.assets import services as assets

    draft = assets.asset_create(actor=actor, tenant=acme, name="churn-model v3")
    reviewed = assets.asset_create(actor=actor, tenant=acme, name="customer-360 dataset")
    reviewed = assets.asset_request_approval(actor=actor, asset=reviewed, delegate=False)
    assets.asset_decide(actor=actor, asset=reviewed, approve=True, reason="demo review")
    _demo_stores(actor, acme)
    report.created.append(
        "demo data (tenants acme and globex, three people, one service, two compute batches, "
        f"two assets: {draft.name}, {reviewed.name}; a store bound for acme in israelcentral)"
    )
    report.secrets.append(f"demo service token (release-pipeline): {issued.secret}")


def _demo_stores(actor, acme) -> None:
    """A store, two profiles, residency rules and one binding (a worker provisions it
    through the local secret broker once `make run` is up)."""
    from apps.registry.models import Service
    from apps.stores import services as stores
    from apps.stores.models import ResidencyRule, Store, StoreProfile

    knowledge, _ = Service.objects.get_or_create(
        name="knowledge", defaults={"description": "Knowledge service (demo)"}
    )
    store = Store.objects.create(
        slug="knowledge-sql",
        name="Knowledge SQL",
        owning_service=knowledge,
        data_class=DataClass.objects.get(slug="customer-content"),
        category=Store.Category.AUTHORITATIVE,
        workload_class="catalog",
    )
    dedicated = StoreProfile.objects.create(
        slug="postgres-dedicated",
        name="PostgreSQL, dedicated tables",
        engine="postgresql",
        shape="dedicated_tables",
        provides_retention_cleanup=True,
    )
    StoreProfile.objects.create(
        slug="mongo-documents",
        name="MongoDB, portable documents",
        engine="mongodb",
        shape="portable_documents",
    )
    allow = ResidencyRule(effect="allow", geographies=["IL", "EU"], reason="default")
    stores.rule_save(actor=actor, rule=allow, regions=[])
    deny = ResidencyRule(
        effect="deny",
        data_class=DataClass.objects.get(slug="personal"),
        geographies=["EU"],
        reason="personal data of Israeli tenants stays in Israel (demo)",
    )
    stores.rule_save(actor=actor, rule=deny, regions=[])
    stores.binding_set(
        actor=actor,
        tenant=acme,
        store=store,
        profile=dedicated,
        region=Region.objects.get(slug="israelcentral"),
    )


def run_setup(*, demo: bool) -> SetupReport:
    report = SetupReport()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [SETUP_LOCK])
        install_reference_data(report)
        install_schedules(report)
        install_consumers(report)
        if demo:
            install_demo_data(report)
    return report
