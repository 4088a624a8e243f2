"""The header's search box (apps.core.search, each app's search.py, the console view):
each kind of identifier found, one match opened, several listed, another tenant's
objects never found, malformed input answered, and a query count that stays flat."""

import re
import uuid
from urllib.parse import urlencode

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from apps.assets import services as assets
from apps.assets.models import WorkflowCallback
from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope, tenant_scope
from apps.core.search import Query
from apps.eventing.models import OutboxEvent, RecentEvent
from apps.governance.models import GovernanceTask
from apps.registry.services import topic_create
from apps.tenancy.models import ServiceAccount
from tests.assets.factories import delegated, new_asset
from tests.compute.factories import submit
from tests.eventing.factories import make_dead_letter, subscribe, write_events
from tests.governance.factories import approved, live_binding
from tests.query_counts import assert_flat_query_count, queries_for
from tests.registry.factories import V1, sync

pytestmark = pytest.mark.django_db
SEARCH = reverse("console:search")


def search(client, q):
    return client.get(SEARCH, {"q": q})


def opens(response, url):
    assert response.status_code == 302, response.content[:300]
    assert response["Location"] == url


def finds_first(response, url):
    """The page opens `url`, the one match, or lists it first among several (an exact
    name, then the names that start so, then those like it)."""
    if response.status_code == 302:
        assert response["Location"] == url
        return
    assert response.status_code == 200
    main = re.search(r"<main>.*</main>", response.content.decode(), re.S).group(0)
    assert re.findall(r'<li><a href="([^"]+)"', main)[:1] == [escape(url)], main


def nothing_found(response):
    assert response.status_code == 200
    assert "Nothing found" in response.content.decode()


def main_of(response, q):
    """The page's main part with the query taken out: what it says about the objects."""
    html = response.content.decode()
    main = re.search(r"<main>.*</main>", html, re.S).group(0)
    return main.replace(q, "QUERY")


@pytest.fixture
def topic(db):
    return topic_create(actor=SYSTEM_ACTOR, name="test.search")


def task_of(order):
    """An owner task of the order, as an order's phase issues it."""
    with tenant_scope(order.tenant):
        return GovernanceTask.objects.create(
            tenant=order.tenant,
            order=order,
            phase=1,
            kind=GovernanceTask.Kind.DELETE,
            owner="search",
            due_at=timezone.now(),
        )


@pytest.fixture
def as_operator(client, operator):
    client.force_login(operator)
    return client


# ----------------------------------------------------------- each kind of identifier


def test_the_header_carries_the_search_box(as_operator):
    html = as_operator.get("/").content.decode()
    assert f'action="{SEARCH}" role="search"' in html
    assert 'type="search" name="q"' in html


def test_a_tenant_is_found_by_slug_and_by_id(as_operator, tenant_a):
    opens(search(as_operator, "alpha"), tenant_a.get_absolute_url())
    opens(search(as_operator, str(tenant_a.pk)), tenant_a.get_absolute_url())
    opens(search(as_operator, "ALP"), tenant_a.get_absolute_url())
    opens(search(as_operator, "alpah"), tenant_a.get_absolute_url())


def test_a_service_account_is_found_by_name(as_operator, tenant_a):
    with tenant_scope(tenant_a):
        account = ServiceAccount.objects.create(name="alpha-ci", tenant=tenant_a)
    # (tenants come before service accounts, and the tenant `alpha` is like `alpha-ci`)
    html = search(as_operator, "alpha-ci").content.decode()
    assert f'href="{account.get_absolute_url()}"' in html
    # a typo: "alpha-ic" is like the account (and nothing else here is like it)
    html = search(as_operator, "alpha-ic").content.decode()
    assert f'href="{account.get_absolute_url()}"' in html


def test_a_topic_and_a_service_are_found_by_exact_name(as_operator, topic):
    sync("r1", V1, name="orders.order", consumers=("billing",))
    finds_first(
        search(as_operator, "orders.order"),
        f"{reverse('registry:topic-list')}?{urlencode({'q': 'orders.order'})}",
    )
    finds_first(
        search(as_operator, "billing"),
        f"{reverse('registry:topic-list')}?{urlencode({'producer': 'billing'})}",
    )
    # by the start of the name, and by a name like it
    finds_first(
        search(as_operator, "orders.ord"),
        f"{reverse('registry:topic-list')}?{urlencode({'q': 'orders.order'})}",
    )
    finds_first(
        search(as_operator, "bililng"),
        f"{reverse('registry:topic-list')}?{urlencode({'producer': 'billing'})}",
    )


def test_a_schema_version_is_found_by_fingerprint_and_by_schema_id(as_operator):
    sync("r1", V1, name="orders.order")
    from apps.registry.models import SchemaVersion

    version = SchemaVersion.objects.get(topic__name="orders.order")
    opens(search(as_operator, version.fingerprint), version.get_absolute_url())
    opens(search(as_operator, version.fingerprint.upper()), version.get_absolute_url())
    opens(search(as_operator, str(version.pk)), version.get_absolute_url())


def test_an_asset_is_found_by_id_name_and_workflow_instance(as_operator, tenant_a):
    asset, instance = delegated(tenant_a, "weights-2026")
    url = asset.get_absolute_url()
    opens(search(as_operator, str(asset.pk)), url)
    opens(search(as_operator, "weights-2026"), url)
    opens(search(as_operator, str(instance)), url)
    spelled = new_asset(tenant_a, "Weights (v2) — final")
    finds_first(search(as_operator, " Weights (v2) — final "), spelled.get_absolute_url())


def test_a_callback_receipt_is_found_by_its_workflow_instance(as_operator, tenant_a):
    asset = new_asset(tenant_a)
    instance = uuid.uuid4()
    with tenant_scope(tenant_a):
        WorkflowCallback.objects.create(
            tenant=tenant_a, asset_id=asset.pk, workflow_instance_id=instance, decision="approved"
        )
    with system_scope():
        WorkflowCallback.objects.create(
            workflow_instance_id=(orphan := uuid.uuid4()),
            decision="approved",
            outcome=WorkflowCallback.Outcome.UNKNOWN_INSTANCE,
        )
    opens(search(as_operator, str(instance)), asset.get_absolute_url())
    # a receipt no asset has waits in the attention queue
    opens(search(as_operator, str(orphan)), reverse("attention:queue"))


def test_a_receipt_whose_asset_was_deleted_is_listed_without_a_link(as_operator, tenant_a):
    asset = new_asset(tenant_a)
    instance = uuid.uuid4()
    with tenant_scope(tenant_a):
        receipt = WorkflowCallback.objects.create(
            tenant=tenant_a, asset_id=asset.pk, workflow_instance_id=instance, decision="approved"
        )
    assets.asset_delete(actor=SYSTEM_ACTOR, asset=asset)
    answer = search(as_operator, str(instance))
    assert answer.status_code == 200
    page = answer.content.decode()
    assert f"<li>{escape(str(receipt))} <small>" in page
    assert "its asset was deleted" in page
    assert asset.get_absolute_url() not in page


def test_a_deleted_assets_receipt_is_its_tenants_alone(client, admin_a, member_b, tenant_a):
    asset = new_asset(tenant_a)
    instance = uuid.uuid4()
    with tenant_scope(tenant_a):
        WorkflowCallback.objects.create(
            tenant=tenant_a, asset_id=asset.pk, workflow_instance_id=instance, decision="approved"
        )
    assets.asset_delete(actor=SYSTEM_ACTOR, asset=asset)
    client.force_login(admin_a)
    assert "its asset was deleted" in search(client, str(instance)).content.decode()
    client.force_login(member_b)
    nothing_found(search(client, str(instance)))


def test_a_compute_batch_is_found_by_id(as_operator, tenant_a):
    batch = submit(tenant_a, step="s-9", instance="wf-77")
    opens(
        search(as_operator, str(batch.pk)),
        f"{reverse('compute:batch-list')}?workflow_instance_id=wf-77&workflow_step_id=s-9",
    )


def test_a_governance_order_and_its_task_are_found_by_id(as_operator, tenant_a):
    order = approved(tenant_a)
    opens(search(as_operator, str(order.pk)), order.get_absolute_url())
    task = task_of(order)
    opens(search(as_operator, str(task.pk)), order.get_absolute_url())


def test_a_store_binding_is_found_by_id(as_operator, tenant_a, store, profile):
    binding = live_binding(tenant_a, store, profile)
    opens(search(as_operator, str(binding.pk)), binding.get_absolute_url())


def test_an_event_is_found_in_the_outbox_and_among_recent_events(as_operator, tenant_a, topic):
    [waiting] = write_events(tenant_a, topic, 1)
    opens(search(as_operator, str(waiting.event_id)), reverse("eventing:overview"))
    seen = uuid.uuid4()
    with tenant_scope(tenant_a):
        RecentEvent.objects.create(
            event_id=seen,
            topic=topic.name,
            event_type="e",
            tenant=tenant_a,
            aggregate_type="thing",
            aggregate_id="a-9",
            occurred_at="2026-01-01T00:00:00Z",
        )
    opens(
        search(as_operator, str(seen)),
        f"{reverse('eventing:recent-list')}?aggregate_id=a-9&topic=test.search",
    )


# ------------------------------------------------------------------- several matches


def test_several_matches_are_listed_by_kind_with_links(as_operator, tenant_a, topic):
    # a dead letter keeps the event id of its outbox row
    dead = make_dead_letter(tenant_a, topic, subscribe(topic, "billing"))
    response = search(as_operator, str(dead.event_id))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h2>Event (outbox)</h2>" in html
    assert "<h2>Dead letter</h2>" in html
    assert f'href="{dead.get_absolute_url()}"' in html
    assert "2 matches" in html


def test_assets_of_one_name_are_listed(as_operator, tenant_a, tenant_b):
    one, two = new_asset(tenant_a, "shared"), new_asset(tenant_b, "shared")
    html = search(as_operator, "shared").content.decode()
    assert f'href="{one.get_absolute_url()}"' in html
    assert f'href="{two.get_absolute_url()}"' in html


def test_an_asset_is_found_by_the_start_of_its_name_in_any_case(as_operator, tenant_a):
    acme = new_asset(tenant_a, "Acme-widgets")
    new_asset(tenant_a, "big-acme")  # holds the text but does not start with it
    # the one match opens; a name found by its start needs no guesses beside it
    opens(search(as_operator, "acm"), acme.get_absolute_url())
    finds_first(search(as_operator, "ACME-W"), acme.get_absolute_url())


def test_the_exact_name_comes_first_then_the_names_that_start_so(as_operator, tenant_a):
    for name in ("acme-tools-longer", "acme-x", "acme", "ACME-t"):
        new_asset(tenant_a, name)
    html = search(as_operator, "acme").content.decode()
    section = re.search(r'<section class="search-kind">.*?</section>', html, re.S).group(0)
    listed = re.findall(r'<li><a href="[^"]+">([^<]+)</a>', section)
    assert listed == ["acme", "ACME-t", "acme-tools-longer", "acme-x"]


def test_a_prefix_never_reaches_another_tenants_assets(client, admin_a, tenant_a, tenant_b):
    new_asset(tenant_b, "acme-bravo")
    mine = new_asset(tenant_a, "acme-alpha")
    client.force_login(admin_a)
    opens(search(client, "acme"), mine.get_absolute_url())
    # their acme-bravo starts so; ours is only like it
    opens(search(client, "acme-b"), mine.get_absolute_url())


def listed_assets(response) -> list[str]:
    html = response.content.decode()
    sections = re.findall(r'<section class="search-kind">.*?</section>', html, re.S)
    [section] = [found for found in sections if "<h2>Asset</h2>" in found]
    return re.findall(r'<li><a href="[^"]+">([^<]+)</a>', section)


def test_a_name_is_found_by_its_start_and_by_a_typo(as_operator, tenant_a):
    ledger = new_asset(tenant_a, "Acme ledger")
    opens(search(as_operator, "acm"), ledger.get_absolute_url())
    opens(search(as_operator, "acne ledger"), ledger.get_absolute_url())
    opens(search(as_operator, "ACME LEDGR"), ledger.get_absolute_url())


def test_likeness_keeps_the_first_character(as_operator, tenant_a):
    """A typo is found anywhere but in the first character, as with a fuzzy query's
    prefix length of 1 (apps.core.search.named), for every kind of thing alike: assets
    (their folded column) and tenants (the expression)."""
    ledger = new_asset(tenant_a, "Acme ledger")
    opens(search(as_operator, "acme ledgr"), ledger.get_absolute_url())
    nothing_found(search(as_operator, "ecme ledger"))
    opens(search(as_operator, "alpah"), tenant_a.get_absolute_url())
    nothing_found(search(as_operator, "xlpha"))


def test_exact_then_start_and_likeness_only_when_neither_finds_one(as_operator, tenant_a):
    # similarity to "ledger": "big ledger" 0.64, "leger" 0.44, "orbital" 0
    for name in ("leger", "orbital", "big ledger", "ledger-b", "Ledger-A", "ledger"):
        new_asset(tenant_a, name)
    assert listed_assets(search(as_operator, "ledger")) == ["ledger", "Ledger-A", "ledger-b"]
    # a typo: nothing is named so or starts so; the likest first (to "ledgr": "ledger"
    # 0.44, "Ledger-A" and "ledger-b" 0.36), nothing under 0.3 ("leger" 0.2, "orbital"
    # 0), nor what starts otherwise ("big ledger" 0.31)
    listed = listed_assets(search(as_operator, "ledgr"))
    assert listed[0] == "ledger" and len(listed) == 3
    assert set(listed[1:3]) == {"Ledger-A", "ledger-b"}


def test_likeness_never_reaches_another_tenants_assets(client, admin_a, member_b, tenant_a):
    theirs = new_asset(tenant_a, "Acme ledger")
    client.force_login(member_b)
    # the answer for a tenant that has none: as for a name nobody has
    for q in ("acne ledger", "acm", "Acme ledger"):
        response = search(client, q)
        nothing_found(response)
        assert theirs.get_absolute_url() not in response.content.decode()
        assert main_of(response, q) == main_of(search(client, "qqqxz"), "qqqxz"), q
    client.force_login(admin_a)
    opens(search(client, "acne ledger"), theirs.get_absolute_url())


def test_the_prefix_lookup_reads_the_pattern_index(tenant_a):
    """On a realistic table (enough assets that a scan costs more than the index, the
    planner's settings as they are), the start of a name is found as a range of an
    index on name_folded, under row-level security as the console reads it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from apps.assets import search as assets_search
    from apps.assets import selectors
    from apps.assets.models import Asset

    with tenant_scope(tenant_a), connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {Asset._meta.db_table} (id, tenant_id, name, description, status,
                decided_by, decision_reason, created_at, updated_at)
            SELECT gen_random_uuid(), %s, md5(g::text) || '-' || g, '', 'draft', '', '',
                now(), now() FROM generate_series(1, 20000) AS g""",  # noqa: S608
            [tenant_a.pk],
        )
        cursor.execute(f"ANALYZE {Asset._meta.db_table}")
    for scope, tenant in ((system_scope(), None), (tenant_scope(tenant_a), tenant_a)):
        with scope:
            found = assets_search._named(selectors.asset_list(tenant=tenant), "abc")
            assert found and all(a.name.upper().startswith("ABC") for a in found[:2])
            with CaptureQueriesContext(connection) as ran:
                assets_search._named(selectors.asset_list(tenant=tenant), "abc")
            [sql] = [q["sql"] for q in ran.captured_queries if '"name_folded" >=' in q["sql"]]
            params = ()
            with connection.cursor() as cursor:
                cursor.execute(f"EXPLAIN {sql}", params)
                plan = "\n".join(row[0] for row in cursor.fetchall())
        # asset_name_prefix, or a trigram index that leads with the folded name (the
        # planner's choice for a range it expects few rows of): the range is the index's
        # condition, never a filter over a scan.
        assert "Index Cond: (((name_folded)::text >= 'ABC'::text)" in plan, plan
        assert "Seq Scan on assets_asset" not in plan, plan


def test_the_likeness_lookup_reads_the_trigram_index_in_order_under_the_policy(tenant_a, tenant_b):
    """On a realistic table (two tenants' 20,000 assets each, the planner's settings as
    they are), the names like a typo are read through asset_name_trgm, its first
    character's range the index's condition and the rows ordered by distance inside the
    index, in the system scope under row-level security; in a tenant's scope through
    asset_name_tenant_trgm, the tenant and the range its condition."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from apps.assets import search as assets_search
    from apps.assets import selectors
    from apps.assets.models import Asset

    for tenant in (tenant_a, tenant_b):
        with tenant_scope(tenant), connection.cursor() as cursor:
            cursor.execute(
                f"""INSERT INTO {Asset._meta.db_table} (id, tenant_id, name, description,
                    status, decided_by, decision_reason, created_at, updated_at)
                SELECT gen_random_uuid(), %s, 'ledger-' || g %% 5000, '', 'draft', '', '',
                    now(), now() FROM generate_series(1, 20000) AS g""",  # noqa: S608
                [tenant.pk],
            )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Asset._meta.db_table}")
    plans = {}
    for scope, tenant in ((system_scope(), None), (tenant_scope(tenant_a), tenant_a)):
        with scope:
            with CaptureQueriesContext(connection) as ran:
                found = assets_search._named(selectors.asset_list(tenant=tenant), "ledgr-42")
            assert len(found) == assets_search.SHOWN
            assert tenant is None or {a.tenant_id for a in found} == {tenant.pk}
            [sql] = [q["sql"] for q in ran.captured_queries if "<->" in q["sql"]]
            with connection.cursor() as cursor:
                cursor.execute(f"EXPLAIN {sql}")
                plans[tenant] = "\n".join(row[0] for row in cursor.fetchall())
    for tenant, index in ((None, "asset_name_trgm"), (tenant_a, "asset_name_tenant_trgm")):
        assert f"Index Scan using {index}" in plans[tenant], plans[tenant]
        assert "Order By: ((name)::text <->" in plans[tenant], plans[tenant]
        range_ = "((name_folded)::text >= 'L'::text) AND ((name_folded)::text < 'M'::text)"
        assert range_ in plans[tenant], plans[tenant]


# ------------------------------------------------------------- other tenants' objects


def test_a_tenant_admin_never_finds_another_tenants_objects(
    client, admin_a, tenant_b, store, profile, topic
):
    asset, instance = delegated(tenant_b, "bravo-secret")
    with tenant_scope(tenant_b):
        account = ServiceAccount.objects.create(name="bravo-ci", tenant=tenant_b)
    order = approved(tenant_b)
    theirs = [
        "bravo",
        str(tenant_b.pk),
        account.name,
        str(asset.pk),
        "bravo-secret",
        "bravo-secrte",  # like their asset's name
        "bravo-secr",  # the start of it
        "bravo-ic",  # like their account's
        str(instance),
        str(submit(tenant_b).pk),
        str(order.pk),
        str(task_of(order).pk),
        str(live_binding(tenant_b, store, profile).pk),
        str(write_events(tenant_b, topic, 1)[0].event_id),
    ]
    client.force_login(admin_a)
    unknown_id, unknown_name = str(uuid.uuid4()), "no-such-name"
    for q in theirs:
        response = search(client, q)
        nothing_found(response)
        # the same answer as for what does not exist
        unknown = unknown_id if Query.parse(q).uuid else unknown_name
        assert main_of(response, q) == main_of(search(client, unknown), unknown), q


def test_a_member_finds_their_own_tenants_asset_and_not_the_others(
    client, member_b, tenant_a, tenant_b
):
    mine, other = new_asset(tenant_b, "common"), new_asset(tenant_a, "common")
    client.force_login(member_b)
    opens(search(client, "common"), mine.get_absolute_url())
    nothing_found(search(client, str(other.pk)))
    nothing_found(search(client, "alpha"))


def test_service_accounts_are_not_found_by_members(client, member_b, tenant_b):
    # as their list, which is for operators and tenant admins
    with tenant_scope(tenant_b):
        ServiceAccount.objects.create(name="bravo-ci", tenant=tenant_b)
    client.force_login(member_b)
    html = search(client, "bravo-ci").content.decode()
    assert "Service account" not in html and "bravo-ci</a>" not in html


def test_operator_pages_stay_operators_matches(client, admin_a, tenant_a, topic):
    # event ids lead to the eventing pages, which are operators' (as their lists)
    [waiting] = write_events(tenant_a, topic, 1)
    client.force_login(admin_a)
    nothing_found(search(client, str(waiting.event_id)))


def test_an_operator_acting_for_a_tenant_finds_that_tenants_objects_only(
    as_operator, tenant_a, tenant_b
):
    from apps.tenancy.middleware import ACTING_TENANT_SESSION_KEY

    mine, other = new_asset(tenant_a), new_asset(tenant_b)
    session = as_operator.session
    session[ACTING_TENANT_SESSION_KEY] = str(tenant_a.pk)
    session.save()
    opens(search(as_operator, str(mine.pk)), mine.get_absolute_url())
    nothing_found(search(as_operator, str(other.pk)))


# ------------------------------------------------------------------ malformed input


@pytest.mark.parametrize(
    "q",
    [
        "x" * 1000,
        "'; select 1; --",
        "%",
        "a*b?",
        "12345678901234567890123",
        "550e8400-e29b-41d4-a716-44665544000",
        "ümlaut",
        "<script>alert(1)</script>",
        "0" * 64,
    ],
)
def test_a_malformed_query_answers_a_page_with_nothing(as_operator, tenant_a, q):
    response = search(as_operator, q)
    nothing_found(response)
    assert "<script>alert(1)</script>" not in response.content.decode()


def test_an_empty_query_answers_the_search_page(as_operator):
    for q in ("", "   "):
        response = search(as_operator, q)
        assert response.status_code == 200
        assert "Nothing found" not in response.content.decode()
    assert as_operator.get(SEARCH).status_code == 200


def test_a_nul_character_is_refused_without_an_error(as_operator):
    response = as_operator.get(f"{SEARCH}?q=a%00b")
    assert response.status_code < 500


def test_anonymous_visitors_are_asked_to_sign_in(client):
    response = search(client, "alpha")
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("console:login"))


def test_the_query_parser_asks_only_the_columns_of_its_shape():
    as_uuid = Query.parse(f" {uuid.uuid4()} ")
    assert as_uuid.uuid is not None and as_uuid.name is None and as_uuid.number is None
    assert Query.parse("42").number == 42
    assert Query.parse("9" * 30).number is None
    assert Query.parse("alpha").fingerprint is None
    assert Query.parse("x" * 256).empty
    assert Query.parse("a\x00b").empty


# ------------------------------------------------------------------------- queries


def test_the_search_costs_the_same_statements_whatever_the_rows(
    as_operator, tenant_a, tenant_b, topic
):
    subscription = subscribe(topic, "billing")
    dead = make_dead_letter(tenant_a, topic, subscription)

    def add_rows(n):
        for i in range(n):
            for tenant in (tenant_a, tenant_b):
                new_asset(tenant, "shared")
                submit(tenant)
            make_dead_letter(tenant_a, topic, subscription, n=i + 1)

    # a typo: no name is it or starts so, and the likeness statement reads as many rows
    # however many are like it
    by_name = assert_flat_query_count(add_rows, lambda: search(as_operator, "sahred"))
    by_id = assert_flat_query_count(add_rows, lambda: search(as_operator, str(dead.event_id)))
    assert by_name < 25 and by_id < 25
    # a name that is found asks no more than that (it leaves likeness out)
    assert queries_for(lambda: search(as_operator, "shared")) < by_name
    with system_scope():
        assert OutboxEvent.objects.filter(event_id=dead.event_id).exists()
