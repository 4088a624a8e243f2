"""README.md's endpoint table and list of apps say what the tree has."""

import re
from pathlib import Path

from django.apps import apps
from django.conf import settings

from portal import urls

README = (Path(settings.BASE_DIR) / "README.md").read_text()


def _table_paths() -> set[str]:
    endpoints = README.split("Endpoints:", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(/[^`]*)` \|", endpoints, re.M))


def _served_prefixes() -> set[str]:
    api = {f"/api/v1/{pattern.pattern}" for pattern in urls.api_v1}
    # The callbacks' own path is listed with its app's API
    api.discard("/api/v1/assets/workflow-callbacks/")
    top = {
        f"/{pattern.pattern}"
        for pattern in urls.urlpatterns
        if str(pattern.pattern).startswith(("api/schema", "healthz", "readyz", "metrics", "admin/"))
        and str(pattern.pattern) != "admin/login/"
    }
    return api | top | {"/", "/api/docs/"}


def test_the_endpoint_table_lists_every_served_prefix_and_nothing_else():
    assert _table_paths() == _served_prefixes()


def test_the_app_list_names_every_app():
    listed = set(re.findall(r"^- `(apps\.[a-z_]+)`", README, re.M))
    installed = {
        config.name for config in apps.get_app_configs() if config.name.startswith("apps.")
    }
    assert listed == installed
