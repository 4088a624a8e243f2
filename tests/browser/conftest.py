"""Console journeys in a real browser: Debian's headless Chromium, driven by Playwright,
against a live Steward server with the test PostgreSQL, Redis and, where the journey
needs one, a real Celery worker.

`make test` finds or installs Chromium before the run (portal/devstack.py) and names it
in STEWARD_CHROMIUM. Each journey saves screenshots of its steps under .data/journeys/
(and one of where it stood, when it fails), for a person to look at after the run.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("STEWARD_DATA_DIR", ROOT / ".data")) / "journeys"

# Chromium in a sandboxless container, with nothing of its own reaching the network:
# the machine's network is closed and its connection attempts would only slow it down.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="package")
def chromium():
    executable = os.environ.get("STEWARD_CHROMIUM")
    if not executable:
        pytest.fail(
            "The browser journeys need Chromium: run them through `make test`, or set "
            "STEWARD_CHROMIUM to a Chromium binary (Debian: apt-get install chromium).",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    # The screenshots are this run's: a stale one, of a failure since mended, misleads.
    shutil.rmtree(SHOTS, ignore_errors=True)
    # Playwright's synchronous API keeps an event loop in the test thread from here on,
    # and Django refuses ORM calls from a thread with one; the tests' own ORM calls are
    # synchronous. Only while the journeys run: later tests start subprocesses that
    # must not inherit it (Django's deployment check refuses it).
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def live_server(django_db_setup, live_server):
    """pytest-django's live server, stopped before the test database is dropped (its
    threads' connections would otherwise keep the database from being dropped)."""
    return live_server


class Journey:
    """One person's browser tab on the live server."""

    def __init__(self, browser, base_url: str, name: str, *, javascript: bool = True):
        self.base_url = base_url
        self.name = name
        self.context = browser.new_context(
            base_url=base_url, java_script_enabled=javascript, accept_downloads=True
        )
        self.context.set_default_timeout(15_000)
        self.page = self.context.new_page()

    def sign_in_as(self, user) -> None:
        """Start signed in (password and second factor done), as after the login journey."""
        client = Client()
        client.force_login(user)
        self.context.add_cookies(
            [
                {
                    "name": settings.SESSION_COOKIE_NAME,
                    "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                    "url": self.base_url,
                }
            ]
        )

    def open(self, path: str):
        response = self.page.goto(path)
        assert response is not None and response.ok, f"{path}: {response and response.status}"
        return self.page

    def reload_until(self, locator, *, timeout: float = 30.0) -> None:
        """Reload until `locator` shows: the console works without JavaScript, so a
        person follows a worker's progress by reloading."""
        deadline = time.monotonic() + timeout
        while not locator.is_visible():
            assert time.monotonic() < deadline, f"not shown within {timeout}s: {locator}"
            self.page.wait_for_timeout(250)
            self.page.reload()

    def screenshot(self, step: str) -> Path:
        SHOTS.mkdir(parents=True, exist_ok=True)
        path = SHOTS / f"{self.name}--{step}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def journey(chromium, live_server, request):
    """Open browser tabs for the test; `journey()` gives one, `journey("second")` another."""
    opened: list[Journey] = []
    base = request.node.name.removeprefix("test_")

    def open_tab(who: str = "", *, javascript: bool = True) -> Journey:
        name = f"{base}-{who}" if who else base
        tab = Journey(chromium, live_server.url, name, javascript=javascript)
        opened.append(tab)
        return tab

    yield open_tab
    failed = getattr(request.node, "journey_failed", False)
    for tab in opened:
        if failed:
            tab.screenshot("failed")  # where it stood, for whoever reads the failure
        tab.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call" and report.failed:
        item.journey_failed = True
    return report


@pytest.fixture
def celery_worker(transactional_db):
    """A real Celery worker in this process, consuming the default queue."""
    from celery.contrib.testing.worker import start_worker

    from portal.celery import app

    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
    ) as worker:
        yield worker
