"""Input no view can mean is refused in one place as a 4xx problem, never a 5xx
(Issue #19, part 3, finding 4)."""

import base64
import os
import subprocess
import sys

import pytest
from django.test import override_settings

from apps.tenancy.models import TOKEN_SCOPES
from tests.conftest import bearer
from tests.factories import service_token

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


@pytest.fixture
def platform(api):
    return bearer(api, service_token(name="platform", scopes=TOKEN_SCOPES))


def assert_problem(answer, status, code):
    assert answer.status_code == status, answer.content[:300]
    assert answer["Content-Type"] == PROBLEM
    assert answer.json()["code"] == code


@pytest.mark.parametrize(
    "method, url",
    [
        ("post", "/api/v1/compute/batches/"),
        ("post", "/api/v1/tenancy/tenants/"),
        ("post", "/api/v1/governance/evidence/verify/"),
        ("post", "/api/v1/registry/model-sync/"),
    ],
)
@pytest.mark.parametrize("depth", [65, 1000, 100_000])
def test_a_deeply_nested_json_body_is_refused_at_parse_time(platform, method, url, depth):
    body = "[" * depth + "]" * depth
    answer = getattr(platform, method)(url, body, content_type="application/json")
    assert_problem(answer, 400, "json_too_deep")


def test_nesting_within_the_bound_is_read(platform):
    body = {"name": "n", "slug": "s", "home_region": "nowhere", "x": [[[[1]]]]}
    answer = platform.post("/api/v1/tenancy/tenants/", body, format="json")
    assert answer.status_code == 400 and answer.json()["code"] == "invalid"


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/tenancy/tenants/",
        "/api/v1/tenancy/audit-events/",
        "/api/v1/tenancy/memberships/",
        "/api/v1/assets/assets/",
        "/api/v1/compute/batches/",
    ],
)
@pytest.mark.parametrize("position", ["x", "\x00", "1" * 40, "2026-13-45"])
def test_a_crafted_cursor_is_invalid_cursor(platform, url, position):
    # `cD14` is base64 of `p=x`: well formed, with a position no ordering field holds.
    cursor = base64.b64encode(f"p={position}".encode()).decode()
    answer = platform.get(url, {"cursor": cursor})
    if answer.status_code == 200:  # a position the field can hold: simply a page
        return
    assert_problem(answer, 400, "invalid_cursor")


def test_the_probe_cursor_on_an_id_ordered_list(platform):
    assert_problem(platform.get("/api/v1/tenancy/audit-events/?cursor=cD14"), 400, "invalid_cursor")


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/stores/stores/%00/",
        "/api/v1/tenancy/tenants/%00/",
        "/api/v1/governance/orders/%00/",
        "/api/v1/tenancy/tenants/?search=%00",
        "/api/v1/tenancy/audit-events/?action=a%00b",
    ],
)
def test_a_nul_byte_in_the_url_is_bad_input(platform, url):
    assert_problem(platform.get(url), 400, "nul_character")


def test_a_nul_byte_in_a_schema_registry_subject_is_bad_input(platform):
    answer = platform.get("/api/schema-registry/subjects/a%00b/versions")
    assert answer.status_code == 400 and answer.json()["error_code"] == 400


def test_a_nul_byte_in_a_console_search_is_bad_input(client, operator):
    client.force_login(operator)
    for url in ("/tenants/?q=%00", "/audit/?q=%00", "/assets/?q=%00"):
        answer = client.get(url)
        assert answer.status_code == 400, url


@pytest.mark.parametrize("size", [3 * 1024 * 1024, 30 * 1024 * 1024])
def test_a_body_over_the_limit_is_413_problem(platform, size):
    body = b'{"name": "' + b"x" * size + b'"}'
    answer = platform.generic(
        "POST", "/api/v1/assets/assets/", body, content_type="application/json"
    )
    assert_problem(answer, 413, "body_too_large")


def test_the_unsupported_media_type_title_names_the_media_type(platform):
    answer = platform.post("/api/v1/tenancy/tenants/", "a=b", content_type="text/plain")
    assert_problem(answer, 415, "unsupported_media_type")
    assert "{" not in answer.json()["title"] and "text/plain" in answer.json()["title"]


def test_the_method_not_allowed_title_names_the_method(platform):
    answer = platform.put("/api/v1/tenancy/audit-events/", {}, format="json")
    assert answer.status_code in (403, 405)
    assert "{" not in answer.json()["title"]


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/governance/orders/not-a-uuid/",
        "/api/v1/governance/tasks/not-a-uuid/",
        "/api/v1/assets/assets/not-a-uuid/",
        "/api/v1/governance/orders/not.a.uuid/",
    ],
)
@pytest.mark.parametrize("debug", [False, True])
def test_a_non_uuid_id_is_a_json_404_problem(platform, url, debug):
    with override_settings(DEBUG=debug):
        answer = platform.get(url)
    assert_problem(answer, 404, "not_found")


def test_an_error_answers_steward_s_page_and_logs_the_traceback(client, caplog, settings):
    # The probe saw Django's technical page (settings, DATABASE_URL, paths) from make run.
    settings.ROOT_URLCONF = "tests.core.boom_urls"
    client.raise_request_exception = False
    page = client.get("/boom")
    api = client.get("/api/v1/boom")
    assert page.status_code == 500 and b"Something went wrong" in page.content
    assert b"DATABASE" not in page.content and b"Traceback" not in page.content
    assert api.status_code == 500 and api["Content-Type"] == PROBLEM
    assert api.json()["code"] == "server_error" and api.json()["request_id"]
    logged = [r for r in caplog.records if r.exc_info and "boom" in str(r.exc_info[1])]
    assert len(logged) == 2


def test_debug_is_off_unless_a_person_opts_in():
    # settings.py is read in a fresh process: pytest-django forces DEBUG off in this one.
    code = "import django; django.setup(); from django.conf import settings as s; print(s.DEBUG)"
    env = {k: v for k, v in os.environ.items() if k != "STEWARD_DEBUG"}
    env["DJANGO_SETTINGS_MODULE"] = "portal.settings"

    def debug(**extra):
        run = [sys.executable, "-c", code]
        done = subprocess.run(run, env={**env, **extra}, capture_output=True, text=True)
        return done.stdout.strip() or done.stderr

    assert debug() == "False"
    assert debug(STEWARD_DEBUG="1") == "True"
