"""Set-up installs things once, even when two processes run it together, and reports
what it installed."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from apps.core import setup
from apps.core.hooks import app_modules
from apps.governance.retention.sweeper import OWN_CLASSES
from apps.tenancy.install import DATA_CLASSES, REGIONS
from apps.tenancy.models import ApiToken, DataClass, Region, Tenant, User
from tests.support import database_url

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db(transaction=True)
def test_two_setups_at_the_same_moment_create_nothing_twice():
    env = {**os.environ, "DATABASE_URL": database_url()}
    command = [sys.executable, "manage.py", "steward_setup", "--demo"]
    procs = [
        subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=120)[0].decode() for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    # exactly one of them loaded the demo data and printed its token
    assert sum("shown once" in out for out in outputs) == 1
    assert Region.objects.count() == len(REGIONS)
    assert DataClass.objects.count() == len(DATA_CLASSES) + len(OWN_CLASSES)
    schedules = [
        s for m in app_modules("install") for s in getattr(m, "SCHEDULES", ()) if not s.crontab
    ]
    assert IntervalSchedule.objects.count() == len({(s[1], s[2]) for s in schedules})
    assert PeriodicTask.objects.filter(name__in=[s[0] for s in schedules]).count() == len(schedules)
    # each job installed switched on or off as its app declares it (the Workflow Service
    # reconciler is on: it only reads the service, and recovers lost callbacks)
    enabled = dict(PeriodicTask.objects.values_list("name", "enabled"))
    assert all(enabled[s.task] == s.enabled for s in schedules)
    assert enabled["assets.periodic_reconcile_workflows"]
    assert User.objects.filter(username="operator").count() == 1
    assert Tenant.objects.filter(slug__in=["acme", "globex"]).count() == 2
    assert ApiToken.objects.count() == 1


@pytest.mark.django_db
def test_the_report_names_each_step_in_order_and_the_demo_in_one_line(settings):
    # given a database with none of the set-up's rows (the topics' migration is undone)
    from apps.registry.models import Topic

    Topic.objects.all().delete()
    # when the set-up runs with the demo data, then again
    first = setup.run_setup(demo=True)
    second = setup.run_setup(demo=True)
    # then topics come first, then regions and data classes, then schedules, and the
    # demo data is one line listing every app's part
    kinds = [line.split(" ")[0] for line in first.created]
    assert kinds.index("topic") < kinds.index("region") < kinds.index("data")
    assert kinds.index("data") < kinds.index("schedule") < kinds.index("demo")
    assert first.created[-1] == (
        "demo data (tenants acme and globex, three people, one service, two compute batches, "
        "two assets: churn-model v3, customer-360 dataset; a store bound for acme in "
        "israelcentral)"
    )
    [secret] = first.secrets
    assert secret.startswith("demo service token (release-pipeline): stw_")
    assert second.created == [] and second.secrets == []


def test_a_listing_closes_a_phrase_that_lists_things_itself_with_a_semicolon():
    assert setup.listing(["one", "two: a, b", "three"]) == "one, two: a, b; three"
    assert setup.listing([]) == ""


def test_each_app_installs_only_its_own_schedules():
    apps_with_schedules = set()
    for module in app_modules("install"):
        app = module.__name__.split(".")[1]
        for schedule in getattr(module, "SCHEDULES", ()):
            assert schedule.task.startswith(f"{app}."), (module.__name__, schedule.task)
            apps_with_schedules.add(app)
    assert "core" not in apps_with_schedules
    assert {"eventing", "compute", "assets", "stores", "governance", "attention"} <= (
        apps_with_schedules
    )
