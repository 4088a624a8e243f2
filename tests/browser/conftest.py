"""Console journeys in a real browser: Debian's headless Chromium, driven by Playwright,
against a live Steward server with the test PostgreSQL, Redis and, where the journey
needs one, a real Celery worker.

`make test` finds or installs Chromium before the run (portal/devstack.py) and names it
in STEWARD_CHROMIUM. Each journey saves screenshots of its steps under .data/journeys/
(and one of where it stood, when it fails), for a person to look at after the run.

Every page a journey's tab loads (each `goto`, each link followed, each form posted) is
checked by axe-core (static/vendor/axe-core, vendored from its npm package, loaded by
these tests only, never by a page Steward serves): a serious or critical violation fails
the journey, naming the page, the rule and the elements. The check reads the page as it
loaded (its DOM, captured on the `load` event) and runs axe over it in a second tab of
the same browser at the same width and colour scheme, with the same stylesheets: so it
works for the journeys that switch JavaScript off, never races a journey that moves on
at once, and one page shown twice is checked once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("STEWARD_DATA_DIR", ROOT / ".data")) / "journeys"
AXE = ROOT / "static" / "vendor" / "axe-core" / "axe.min.js"

# A desktop's width, and a phone's (an iPhone 14's CSS pixels).
WIDE = {"width": 1280, "height": 900}
NARROW = {"width": 390, "height": 844}

AXE_RUN = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.impact} ${v.id} (${v.help}) at ` +
      v.nodes.slice(0, 5).map((n) => n.target.join(" ")).join("; "));
}"""
# The outermost elements reaching past the window's right edge, outside any box that
# scrolls or clips them: what makes a page wider than a phone.
OVERFLOWING = """() => {
  const clipped = (el) => {
    // An absolutely placed element escapes a scrolling box that does not contain it.
    if (["absolute", "fixed"].includes(getComputedStyle(el).position)) return false;
    for (let p = el.parentElement; p; p = p.parentElement) {
      if (["auto", "scroll", "hidden", "clip"].includes(getComputedStyle(p).overflowX)) return true;
    }
    return false;
  };
  const out = [];
  for (const el of document.body.querySelectorAll("*")) {
    if (out.length >= 5) break;
    const box = el.getBoundingClientRect();
    if (box.right > window.innerWidth + 1 && !clipped(el)
        && !out.some((o) => o.el.contains(el))) {
      const name = [el.tagName.toLowerCase(), ...el.classList].join(".");
      out.push({el, text: `${name} (${Math.round(box.right)}px)`});
    }
  }
  return out.map((o) => o.text);
}"""
STILL = "*, *::before, *::after { transition: none !important; animation: none !important; }"
# Form tokens differ on every load of the same page; they do not change what axe sees.
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"')

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


class Accessibility:
    """axe-core in a tab of its own: shown a page's HTML at a page's width and colour
    scheme, it answers the serious and critical violations (cached by content)."""

    PATH = "/__axe__/"

    def __init__(self, browser, base_url: str):
        self.browser = browser
        self.base_url = base_url
        self.tabs: dict = {}
        self.answers: dict[str, list[str]] = {}
        self.html = ""
        self.checked = 0

    def _tab(self, viewport: dict, color_scheme: str):
        key = (viewport["width"], viewport["height"], color_scheme)
        if key not in self.tabs:
            context = self.browser.new_context(
                base_url=self.base_url, viewport=viewport, color_scheme=color_scheme
            )
            page = context.new_page()
            # An empty page of the live server's origin, so the pages shown in it find
            # their stylesheets; axe-core is read into it once.
            page.route(
                lambda url: url.startswith(self.base_url + self.PATH),
                lambda route: route.fulfill(
                    status=200, content_type="text/html; charset=utf-8", body="<!doctype html>"
                ),
            )
            page.goto(self.PATH)
            page.add_script_tag(path=str(AXE))
            self.tabs[key] = page
        return self.tabs[key]

    def violations(self, html: str, *, viewport: dict, color_scheme: str) -> list[str]:
        html = CSRF.sub('name="csrfmiddlewaretoken" value=""', html)
        digest = hashlib.sha256(f"{viewport}{color_scheme}{html}".encode()).hexdigest()
        if digest not in self.answers:
            page = self._tab(viewport, color_scheme)
            # document.write keeps the window, and axe-core in it: no script is read
            # again for each page.
            page.set_content(html)
            # Colours are read as they end, not halfway through Pico's transitions.
            page.add_style_tag(content=STILL)
            self.answers[digest] = page.evaluate(AXE_RUN)
            self.checked += 1
        return self.answers[digest]

    def close(self) -> None:
        for page in self.tabs.values():
            page.context.close()


@pytest.fixture(scope="package")
def accessibility(chromium, live_server):
    checker = Accessibility(chromium, live_server.url)
    yield checker
    checker.close()


@pytest.fixture(scope="session")
def live_server(django_db_setup, live_server):
    """pytest-django's live server, stopped before the test database is dropped (its
    threads' connections would otherwise keep the database from being dropped)."""
    return live_server


class Journey:
    """One person's browser tab on the live server, at a desktop's width unless told."""

    def __init__(
        self,
        browser,
        base_url: str,
        name: str,
        *,
        javascript: bool = True,
        viewport: dict = WIDE,
        color_scheme: str = "light",
    ):
        self.base_url = base_url
        self.name = name
        self.color_scheme = color_scheme
        self.context = browser.new_context(
            base_url=base_url,
            java_script_enabled=javascript,
            accept_downloads=True,
            viewport=viewport,
            color_scheme=color_scheme,
        )
        self.context.set_default_timeout(15_000)
        self.page = self.context.new_page()
        # (url, html, viewport) of each page as it loaded, for axe (see the module's note).
        self.loaded: list[tuple[str, str, dict]] = []
        self.page.on("load", lambda _page: self._keep_loaded())

    def _keep_loaded(self) -> None:
        from playwright.sync_api import Error

        # Navigated on before it could be read: the next page is kept instead.
        with contextlib.suppress(Error):
            self.loaded.append((self.page.url, self.page.content(), self.page.viewport_size))

    def accessibility_violations(self, checker: Accessibility) -> list[str]:
        """Each serious or critical violation on the pages this tab loaded, by page."""
        self.page.wait_for_timeout(0)  # lets a load that just fired be kept
        if not self.page.url.startswith("about:"):
            self._keep_loaded()  # the page it ends on, as it stands now
        found: list[str] = []
        for url, html, viewport in self.loaded:
            for violation in checker.violations(
                html, viewport=viewport, color_scheme=self.color_scheme
            ):
                where = f"{url.removeprefix(self.base_url)} [{viewport['width']}px"
                line = f"{where}, {self.color_scheme}]: {violation}"
                if line not in found:
                    found.append(line)
        return found

    def assert_fits_the_width(self) -> None:
        """Nothing makes the page wider than the window (wide content scrolls in its card)."""
        wide, window = self.page.evaluate(
            "[document.documentElement.scrollWidth, window.innerWidth]"
        )
        if wide > window:
            culprits = self.page.evaluate(OVERFLOWING)
            raise AssertionError(
                f"{self.page.url}: {wide}px wide in a {window}px window; past its edge: "
                + "; ".join(culprits)
            )

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
def journey(chromium, live_server, accessibility, request):
    """Open browser tabs for the test; `journey()` gives one, `journey("second")` another.
    Once the test has passed, axe-core's verdict on every page the tabs loaded decides."""
    opened: list[Journey] = []
    base = request.node.name.removeprefix("test_")

    def open_tab(who: str = "", **options) -> Journey:
        name = f"{base}-{who}" if who else base
        tab = Journey(chromium, live_server.url, name, **options)
        opened.append(tab)
        return tab

    yield open_tab
    failed = getattr(request.node, "journey_failed", False)
    violations: list[str] = []
    for tab in opened:
        if failed:
            tab.screenshot("failed")  # where it stood, for whoever reads the failure
        else:
            violations += [
                found
                for found in tab.accessibility_violations(accessibility)
                if found not in violations
            ]
        tab.close()
    if violations:
        pytest.fail(
            "axe-core: serious or critical violations\n" + "\n".join(violations), pytrace=False
        )


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


@pytest.fixture(autouse=True)
def _webhooks_reach_local_receivers(loopback_webhooks):
    """This directory's webhooks are delivered to receivers on loopback."""
