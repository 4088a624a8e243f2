"""Fixtures of the core tests."""

import pytest
from django.test import Client


@pytest.fixture
def scrape():
    """Read `/metrics` into {series: value}."""

    def scrape(client=None, **headers) -> dict:
        answer = (client or Client()).get("/metrics", **headers)
        assert answer.status_code == 200, answer.content
        figures = {}
        for line in answer.content.decode().splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                figures[name] = float(value)
        return figures

    return scrape
