"""The console shell: login and lockout, the tenant switcher, list pages."""

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import URLResolver, get_resolver, reverse

from apps.console.listing import CappedPaginator, ListPage
from apps.core.context import SYSTEM_ACTOR
from apps.core.counting import count_up_to
from apps.core.scope import system_scope
from apps.tenancy import services
from apps.tenancy.middleware import ACTING_TENANT_SESSION_KEY
from apps.tenancy.models import AuditEvent
from tests.console.chart_seed import seed_every_chart
from tests.eventing import conftest as eventing
from tests.factories import TenantFactory, member
from tests.query_counts import assert_flat_query_count

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery"

# A topic of its own per test, its stream deleted after it (the eventing tests' fixture).
topic = eventing.topic


def login(client, username, password=PASSWORD):
    return client.post(reverse("console:login"), {"username": username, "password": password})


def test_the_console_asks_anonymous_visitors_to_sign_in(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("console:login"))


def test_a_person_signs_in_and_sees_the_dashboard(client, admin_a):
    response = login(client, "admin-a")
    assert response.status_code == 302
    page = client.get("/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Acting for <strong>alpha</strong>" in html
    for label in (
        "Tenants",
        "Assets",
        "Registry",
        "Stores",
        "Governance",
        "Compute",
        "Audit",
        "Retention",
    ):
        assert label in html
    # an operator's page, not shown to a tenant admin (apps.console.access)
    assert ">Eventing</a>" not in html


def test_wrong_credentials_are_refused(client, admin_a):
    response = login(client, "admin-a", "wrong")
    assert response.status_code == 401
    assert "Wrong username or password" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_repeated_failures_lock_the_password_alone(client, admin_a, settings):
    # admin-a has no authenticator: while the name is locked, nothing lets her in
    settings.STEWARD_LOGIN_MAX_FAILURES = 3
    assert [login(client, "admin-a", "wrong").status_code for _ in range(3)] == [401, 401, 429]
    locked = login(client, "admin-a")
    assert locked.status_code == 429
    assert "Too many failed sign-ins for this account" in locked.content.decode()
    assert int(locked["Retry-After"]) > 0
    assert "_auth_user_id" not in client.session
    with system_scope():
        assert AuditEvent.objects.filter(action="user.lock", object_id=str(admin_a.pk)).count() == 1


def test_the_admin_login_goes_through_the_console_login(client):
    response = client.get("/admin/login/?next=/admin/")
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("console:login"))


def test_an_operator_switches_the_tenant_they_act_for(client, operator, tenant_a, tenant_b):
    client.force_login(operator)
    assert "All tenants" in client.get("/").content.decode()
    client.post(reverse("console:switch-tenant"), {"tenant": str(tenant_b.pk)})
    assert client.session[ACTING_TENANT_SESSION_KEY] == str(tenant_b.pk)
    assert "Acting for <strong>bravo</strong>" in client.get("/").content.decode()
    client.post(reverse("console:switch-tenant"), {"tenant": ""})
    assert ACTING_TENANT_SESSION_KEY not in client.session


def test_a_person_cannot_switch_to_a_tenant_they_do_not_belong_to(client, admin_a, tenant_b):
    client.force_login(admin_a)
    response = client.post(reverse("console:switch-tenant"), {"tenant": str(tenant_b.pk)})
    assert response.status_code == 403
    assert ACTING_TENANT_SESSION_KEY not in client.session


def test_the_audit_page_is_for_operators_and_tenant_admins(client, member_b, admin_a):
    client.force_login(member_b)
    assert client.get(reverse("console:audit-list")).status_code == 403
    client.force_login(admin_a)
    assert client.get(reverse("console:audit-list")).status_code == 200


def test_audit_page_filters_and_searches(client, operator, tenant_a, tenant_b):
    member(tenant_a, username="findme")
    member(tenant_b, username="other")
    client.force_login(operator)
    page = client.get(reverse("console:audit-list"), {"tenant": "alpha", "q": "findme"})
    rows = list(page.context["object_list"])
    assert rows and all(row.tenant_id == tenant_a.pk for row in rows)
    assert all("findme" in row.object_repr for row in rows)


def test_tenant_list_sorts_and_paginates(client, operator, region):
    for n in range(7):
        TenantFactory(slug=f"t{n}", home_region=region)
    client.force_login(operator)
    page = client.get(reverse("console:tenant-list"), {"sort": "-slug"})
    slugs = [t.slug for t in page.context["object_list"]]
    assert slugs == sorted(slugs, reverse=True)
    ignored = client.get(reverse("console:tenant-list"), {"sort": "password"})
    assert [t.slug for t in ignored.context["object_list"]] == sorted(slugs)


@pytest.fixture
def tenants_under_a_cap(client, operator, region, monkeypatch, no_remembered_counts):
    """The tenant list, with its cap lowered and a page of two, read by an operator."""

    def tenants(cap: int, slugs) -> str:
        monkeypatch.setattr(CappedPaginator, "cap", cap)
        monkeypatch.setattr("apps.console.views.TenantListView.paginate_by", 2)
        for slug in slugs:
            TenantFactory(slug=slug, home_region=region)
        client.force_login(operator)
        return reverse("console:tenant-list")

    return tenants


def test_a_long_list_counts_up_to_the_cap_and_pages_up_to_it(client, tenants_under_a_cap):
    # given more tenants than a (lowered) cap, and a page of two
    url = tenants_under_a_cap(5, [f"t{n}" for n in range(7)])
    # when the first page is read, then the last page under the cap, then one past it
    first, last = client.get(url), client.get(url, {"page": 3})
    # then the count says "more than", the pages end at the cap
    assert first.context["paginator"].capped and "5+ in all" in first.content.decode()
    assert first.context["paginator"].num_pages == 3
    assert len(last.context["object_list"]) == 1  # the fifth; the sixth and seventh are past it
    assert client.get(url, {"page": 4}).status_code == 404
    # and a list under the cap is counted exactly
    exact = client.get(url, {"q": "t1"})
    assert not exact.context["paginator"].capped and "1 in all" in exact.content.decode()


def test_a_list_past_the_cap_is_not_counted_again_while_that_is_remembered(
    client, region, tenants_under_a_cap
):
    # given a search matching more tenants than a (lowered) cap, and a page of two
    url = tenants_under_a_cap(3, [f"past-{n}" for n in range(5)])

    def counts(query):
        with CaptureQueriesContext(connection) as queries:
            page = client.get(url, query)
        assert "3+ in all" in page.content.decode()
        return sum("count(*) from (" in q["sql"].lower() for q in queries)

    # when the list is read twice, then another page of it
    # then only the first read counts, and the rest still say "more than"
    assert [counts({"q": "past"}), counts({"q": "past"}), counts({"q": "past", "page": 2})] == [
        1, 0, 0,
    ]  # fmt: skip
    # and a search under the cap is counted on every read
    assert "1 in all" in client.get(url, {"q": "past-1"}).content.decode()
    TenantFactory(slug="past-10", home_region=region)
    assert "2 in all" in client.get(url, {"q": "past-1"}).content.decode()


@pytest.mark.parametrize(
    "url_name", ["console:tenant-list", "console:audit-list", "console:service-account-list"]
)
def test_list_pages_query_count_does_not_grow_with_rows(client, operator, region, url_name):
    client.force_login(operator)

    def add_rows(n):
        for _ in range(n):
            tenant = TenantFactory(home_region=region)
            member(tenant, role="admin")
            services.service_account_create(
                actor=SYSTEM_ACTOR, name=f"svc-{tenant.slug}", tenant=tenant
            )

    assert_flat_query_count(add_rows, lambda: client.get(reverse(url_name)))


def test_lockout_while_signed_in_as_a_tenant_user_is_still_a_clean_refusal(
    client, admin_a, settings
):
    settings.STEWARD_LOGIN_MAX_FAILURES = 2
    client.force_login(admin_a)
    responses = [login(client, "admin-a", "wrong") for _ in range(3)]
    assert [r.status_code for r in responses] == [401, 429, 429]
    assert "Too many failed sign-ins" in responses[-1].content.decode()


def test_members_do_not_see_the_audit_trail_on_the_dashboard(client, member_b, admin_a):
    client.force_login(member_b)
    assert "Recent changes" not in client.get("/").content.decode()
    client.force_login(admin_a)
    assert "Recent changes" in client.get("/").content.decode()


def _list_pages(patterns=None, prefix=""):
    """Every console list page without URL parameters, by its path."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _list_pages(pattern.url_patterns, route)
        elif "<" not in route and issubclass(
            getattr(pattern.callback, "view_class", object), ListPage
        ):
            yield "/" + route


def test_every_list_page_names_each_of_its_filters(client, operator):
    client.force_login(operator)
    pages = list(_list_pages())
    assert "/assets/" in pages and len(pages) > 10
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        assert "[invalid name]" not in response.content.decode(), path


def test_every_list_page_counts_what_djangos_own_count_reads(
    client, operator, tenant_a, tenant_b, topic, store, profile, monkeypatch, no_remembered_counts
):
    # given rows on most pages, a cap of two so that some lists pass it, and each count
    # also read as Django's paginator read it before counts were remembered
    seed_every_chart(
        tenant_a=tenant_a, tenant_b=tenant_b, topic=topic, store=store, profile=profile,
        operator=operator,
    )  # fmt: skip
    monkeypatch.setattr(CappedPaginator, "cap", 2)
    read = []

    def alongside_djangos(rows, bound):
        read.append((count_up_to(rows, bound), rows.order_by()[: bound + 1].count()))
        return read[-1][0]

    monkeypatch.setattr("apps.console.listing.count_up_to", alongside_djangos)
    client.force_login(operator)
    # when every list page is read twice, whole and searched
    for path in _list_pages():
        for query in ({}, {"q": "a"}, {}, {"q": "a"}):
            assert client.get(path, query).status_code == 200, path
    # then each count is Django's, past the cap and under it
    assert all(ours == djangos for ours, djangos in read), read
    assert {min(n, 3) for n, _ in read} == {0, 1, 2, 3}


def test_the_dashboard_shows_the_panels_the_domains_contribute(client, tenant_a, member_b):
    requester = member(tenant_a, role="admin", username="requester")
    governor = member(tenant_a, role="admin", username="governor")
    client.force_login(requester)
    ordered = client.post(
        "/governance/orders/new/",
        {"tenant": tenant_a.slug, "kind": "deletion", "reason": "contract ended"},
    )
    assert ordered.status_code == 302
    client.force_login(governor)
    assert "Governance needs attention" in client.get("/").content.decode()
    client.force_login(member_b)
    assert "Governance needs attention" not in client.get("/").content.decode()


def test_the_tenant_switcher_lists_what_the_template_loop_did():
    """The options are written in one pass (apps.console.context_processors): the same
    markup as the loop they replace, escaped, the acting tenant's selected."""
    from django.template import engines

    from apps.console.context_processors import tenant_options

    loop = engines["django"].from_string(
        '{% for id, slug in switchable %}<option value="{{ id }}"{% if acting and '
        'acting.pk|stringformat:"s" == id %} selected{% endif %}>{{ slug }}</option>{% endfor %}'
    )

    class Acting:
        def __init__(self, pk):
            self.pk = pk

    ids = [uuid.uuid4() for _ in range(4)]
    switchable = [(str(pk), slug) for pk, slug in zip(ids, ["a", "b&c", "<d>", '"e"'], strict=True)]
    for acting in (None, Acting(ids[0]), Acting(ids[2]), Acting(uuid.uuid4())):
        expected = loop.render({"switchable": switchable, "acting": acting})
        assert tenant_options(switchable, acting) == expected
    assert tenant_options([], None) == ""


def _switcher_read(queries) -> bool:
    return any("tenancy_tenant" in q["sql"] and "LIMIT 200" in q["sql"] for q in queries)


def test_an_operators_switcher_is_cached_and_shows_each_tenant_change_at_once(
    client, operator, region, django_capture_on_commit_callbacks
):
    client.force_login(operator)
    page = reverse("eventing:overview")

    def options():
        with django_capture_on_commit_callbacks(execute=True):
            with CaptureQueriesContext(connection) as seen:
                body = client.get(page).content.decode()
        return body, _switcher_read(seen.captured_queries)

    # given a first page, which reads the tenants and keeps them once its transaction commits
    assert options()[1]
    # then the next page offers them without reading them again
    body, read = options()
    assert not read and "All tenants (system)" in body
    # and a tenant added, renamed or suspended is offered as it now is at the next page
    added = TenantFactory(slug="added-now", home_region=region)
    body, read = options()
    assert read and ">added-now</option>" in body
    services.tenant_update(actor=SYSTEM_ACTOR, tenant=added, name="Renamed", slug="renamed-now")
    body, _ = options()
    assert ">renamed-now</option>" in body and ">added-now</option>" not in body


def test_a_tenant_made_in_a_transaction_that_rolls_back_is_never_offered(
    region, django_capture_on_commit_callbacks
):
    from django.db import transaction

    from apps.tenancy import auth_cache
    from apps.tenancy.selectors import operator_tenant_choices

    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            TenantFactory(slug="rolled-back", home_region=region)
            assert "rolled-back" in {slug for _, slug in operator_tenant_choices()}
            raise RuntimeError
    assert auth_cache.tenant_choices_lookup()[0] is None
    assert "rolled-back" not in {slug for _, slug in operator_tenant_choices()}
