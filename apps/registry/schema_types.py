"""Temporary: apps.registry.formats under its old name, for the modules
another branch is moving (schemas.py, confluent.py). Delete once their imports name
apps.registry.formats."""

from apps.registry.formats import *  # noqa: F403
