"""Temporary: apps.registry.formats.schema_text under its old name, for the modules another
branch is moving (confluent.py). Delete once their imports name apps.registry.formats."""

from apps.registry.formats import schema_text  # noqa: F401
