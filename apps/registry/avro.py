"""Temporary: apps.registry.formats.avro under its old name, for the modules
another branch is moving (schemas.py, confluent.py). Delete once their imports name
apps.registry.formats.avro."""

from apps.registry.formats.avro import *  # noqa: F403
