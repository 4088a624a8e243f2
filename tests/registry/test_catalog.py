"""Steward's own topics: their descriptions fit the topic's column, or the migration
that installs them fails on a fresh database."""

from apps.registry.catalog import STEWARD_TOPICS
from apps.registry.models import Topic


def test_every_steward_topic_description_fits_its_column():
    limit = Topic._meta.get_field("description").max_length
    assert all(len(description) <= limit for _, description in STEWARD_TOPICS)
