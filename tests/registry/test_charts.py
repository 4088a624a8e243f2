"""The registry's overview (apps.registry.charts): versions per topic over the weeks and
the acknowledgements still awaited, equal to the counts queried here; its statements do
not grow with the versions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.registry.models import Acknowledgement, SchemaVersion, Topic
from tests.console.chart_figures import chart_figures, column
from tests.query_counts import assert_flat_query_count
from tests.registry.factories import add_versions

pytestmark = pytest.mark.django_db


def test_the_overview_draws_versions_per_topic_and_acknowledgements_outstanding(client, operator):
    add_versions(2)
    first, second = Topic.objects.filter(name__startswith="orders.listed").order_by("name")
    old = SchemaVersion.objects.filter(topic=first, version=1)
    old.update(created_at=timezone.now() - timedelta(weeks=3))
    client.force_login(operator)
    html = client.get(reverse("registry:overview")).content.decode()

    weekly = chart_figures(html, "versions-per-topic")
    assert len(weekly) == 12
    since = timezone.now() - timedelta(weeks=12)
    for topic in (first, second):
        drawn = sum(column(weekly, topic.name.capitalize()).values())
        versions = SchemaVersion.objects.filter(topic=topic, created_at__gte=since)
        assert drawn == versions.count() == 2
    # The older version sits in its own week, three weeks back.
    assert sum(1 for v in column(weekly, first.name.capitalize()).values() if v) == 2

    acks = chart_figures(html, "acknowledgements-outstanding")
    pending = SchemaVersion.objects.filter(state="awaiting_acknowledgement")
    assert set(acks) == {str(v) for v in pending}
    for version in pending:
        given = Acknowledgement.objects.filter(version=version, withdrawn_at=None).count()
        awaited = version.topic.consumers.count() - given
        assert (acks[str(version)]["Acknowledged"], acks[str(version)]["Awaited"]) == (
            given,
            awaited,
        )
        assert (given, awaited) == (1, 1)


def test_the_overviews_statements_do_not_grow_with_the_versions(client, operator):
    client.force_login(operator)
    assert_flat_query_count(
        add_versions, lambda: client.get(reverse("registry:overview")), few=1, more=3
    )
