"""Content-Security-Policy on every answer, templates that keep to it, production cookies."""

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
CSP = "Content-Security-Policy"

# What the policy refuses in a page: a <script> without src (or with a body), a <style>
# element, a style= attribute, an on…= handler, a javascript: URL.
FORBIDDEN = {
    "inline script": re.compile(r"<script(?![^>]*\bsrc=)[^>]*>|<script[^>]*>\s*[^<\s]", re.I),
    "style element": re.compile(r"<style\b", re.I),
    "style attribute": re.compile(r"\sstyle\s*=", re.I),
    "event handler attribute": re.compile(r"\son[a-z]+\s*=", re.I),
    "javascript: URL": re.compile(r"javascript:", re.I),
}


def template_files():
    roots = [ROOT / "templates", *ROOT.glob("apps/*/templates")]
    return sorted(p for root in roots for p in root.rglob("*.html"))


def violations(text: str) -> list[str]:
    # Template comments may name what they avoid.
    text = re.sub(r"{#.*?#}", "", text, flags=re.S)
    text = re.sub(r"{% comment %}.*?{% endcomment %}", "", text, flags=re.S)
    return [name for name, pattern in FORBIDDEN.items() if pattern.search(text)]


@pytest.mark.parametrize(
    "snippet",
    [
        "<script>alert(1)</script>",
        '<script src="/static/x.js">alert(1)</script>',
        "<style>p{}</style>",
        '<p style="color: red">',
        '<button onclick="go()">',
        '<a href="javascript:go()">',
    ],
)
def test_the_template_scan_catches_what_the_policy_refuses(snippet):
    assert violations(snippet)


def test_the_template_scan_lets_external_scripts_pass():
    assert violations('<script src="/static/x.js" defer></script>') == []


def test_no_template_has_inline_script_style_or_handlers():
    files = template_files()
    assert files, "no templates found"
    found = {
        str(path.relative_to(ROOT)): bad for path in files if (bad := violations(path.read_text()))
    }
    assert found == {}


HTMX_REQUEST = re.compile(r"<(\w+)[^>]*\bhx-(?:get|post|put|patch|delete)=[^>]*>", re.I)


def test_htmx_only_enhances_links_and_forms_that_work_without_javascript():
    # Reading must work with JavaScript off: an element htmx drives must be a link or a
    # form that does the same by itself.
    unreadable = {}
    for path in template_files():
        for tag in HTMX_REQUEST.finditer(path.read_text()):
            if not re.search(r"\b(href|action)=", tag.group(0)):
                unreadable.setdefault(str(path.relative_to(ROOT)), []).append(tag.group(0))
    assert unreadable == {}


@pytest.mark.django_db
def test_console_pages_carry_the_policy(client, operator):
    response = client.get("/login/")
    assert response.status_code == 200
    assert response[CSP] == settings.STEWARD_CSP
    assert "script-src 'self';" in response[CSP]
    assert "frame-ancestors 'none'" in response[CSP]
    client.force_login(operator)
    assert client.get("/")[CSP] == settings.STEWARD_CSP


@pytest.mark.django_db
def test_api_answers_carry_the_policy(client):
    assert client.get("/api/v1/whoami/")[CSP] == settings.STEWARD_CSP
    assert client.get("/api/schema/")[CSP] == settings.STEWARD_CSP


def test_static_files_carry_the_policy(client):
    response = client.get("/static/console/steward.css")
    assert response.status_code == 200
    assert response[CSP] == settings.STEWARD_CSP


@pytest.mark.django_db
def test_swagger_ui_runs_its_script_from_a_url_under_its_own_policy(client):
    page = client.get("/api/docs/")
    assert page.status_code == 200
    policy = page[CSP]
    assert "script-src 'self';" in policy  # scripts stay strict
    assert "style-src 'self' 'unsafe-inline'" in policy
    html = page.content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html)
    script = client.get("/api/docs/", {"script": ""})
    assert script.status_code == 200
    assert b"SwaggerUIBundle" in script.content


def production_settings(*names: str, **env) -> dict:
    code = (
        "import json, django; django.setup(); from django.conf import settings; "
        f"print(json.dumps({{n: getattr(settings, n) for n in {list(names)!r}}}, default=str))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, **PRODUCTION_ENV, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


PRODUCTION_ENV = {
    "DJANGO_SETTINGS_MODULE": "portal.settings",
    "STEWARD_ENV": "production",
    "STEWARD_SECRET_KEY": secrets.token_urlsafe(50),
    "STEWARD_ALLOWED_HOSTS": "steward.example.org",
    "DATABASE_URL": "postgresql://steward@db.example.org/steward",
    "REDIS_URL": "redis://redis.example.org:6379/0",
}


def test_production_mode_sets_secure_cookies_and_transport():
    found = production_settings(
        "DEBUG",
        "SESSION_COOKIE_SECURE",
        "SESSION_COOKIE_HTTPONLY",
        "SESSION_COOKIE_SAMESITE",
        "SESSION_COOKIE_NAME",
        "CSRF_COOKIE_SECURE",
        "CSRF_COOKIE_HTTPONLY",
        "CSRF_COOKIE_SAMESITE",
        "CSRF_COOKIE_NAME",
        "SECURE_SSL_REDIRECT",
        "SECURE_HSTS_SECONDS",
        "SECURE_CONTENT_TYPE_NOSNIFF",
        "X_FRAME_OPTIONS",
        "SESSION_EXPIRE_AT_BROWSER_CLOSE",
    )
    assert found == {
        "DEBUG": False,
        "SESSION_COOKIE_SECURE": True,
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "SESSION_COOKIE_NAME": "__Host-steward_session",
        "CSRF_COOKIE_SECURE": True,
        "CSRF_COOKIE_HTTPONLY": True,
        "CSRF_COOKIE_SAMESITE": "Lax",
        "CSRF_COOKIE_NAME": "__Host-steward_csrftoken",
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 3600,
        "SECURE_CONTENT_TYPE_NOSNIFF": True,
        "X_FRAME_OPTIONS": "DENY",
        "SESSION_EXPIRE_AT_BROWSER_CLOSE": False,
    }


def test_sessions_may_end_when_the_browser_closes():
    found = production_settings(
        "SESSION_EXPIRE_AT_BROWSER_CLOSE", STEWARD_SESSION_EXPIRE_AT_BROWSER_CLOSE="true"
    )
    assert found == {"SESSION_EXPIRE_AT_BROWSER_CLOSE": True}


def test_djangos_deployment_check_finds_only_what_is_left_to_the_operator():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=ROOT,
        env={**os.environ, **PRODUCTION_ENV},
        capture_output=True,
        text=True,
        timeout=60,
    )
    issues = set(re.findall(r"\(([a-z_.]+\.[WE]\d+)\)", result.stdout + result.stderr))
    # Subdomains and preloading commit every host of the domain to HTTPS for good: the
    # operator opts in (STEWARD_HSTS_INCLUDE_SUBDOMAINS, STEWARD_HSTS_PRELOAD).
    assert issues <= {"security.W005", "security.W021"}, result.stdout + result.stderr
