"""Temporary: apps.registry.formats.json_schema under its old name, for the modules
another branch is moving (schemas.py, confluent.py). Delete once their imports name
apps.registry.formats.json_schema."""

from apps.registry.formats.json_schema import *  # noqa: F403
