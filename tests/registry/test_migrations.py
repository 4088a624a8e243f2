"""Migrations that move data the registry has handed out: schema ids clients hold."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.registry import formats
from apps.registry.models import SchemaIdentity, SchemaVersion, Topic, schema_identity_key

BEFORE = [("registry", "0013_merge_references_and_readers")]
# the latest: the models the assertions use are the latest's, and so is what the test
# leaves the database at for the tests after it
AFTER = [("registry", "0023_protobuf_numbers_as_written")]


@pytest.mark.django_db(transaction=True)
def test_shared_ids_keep_every_id_handed_out_and_modes_move_to_each_subject():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    OldTopic, OldVersion = (
        old.get_model("registry", "Topic"),
        old.get_model("registry", "SchemaVersion"),
    )
    # given: ids handed out one per version, two versions of one schema in two subjects
    topic = OldTopic.objects.create(name="payments", registry_mode="READONLY")
    other = OldTopic.objects.create(name="refunds")
    rows = {}
    for key, (owner, role, number, fingerprint) in {
        "a": (topic, "value", 1, "f1"),
        "b": (other, "value", 1, "f1"),  # the same schema as a
        "c": (topic, "key", 1, "f2"),
    }.items():
        rows[key] = OldVersion.objects.create(
            topic=owner,
            role=role,
            version=number,
            schema_type="JSON",
            schema={},
            canonical="{}",
            fingerprint=fingerprint,
            state="published",
        ).pk
    # when
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    # then: every id still resolves to its own version's schema
    for pk in rows.values():
        assert SchemaVersion.objects.get(pk=pk).identity_id == pk
    # the lowest id of the shared schema is the one new registrations reuse
    reusable = SchemaIdentity.objects.filter(reusable=True).values_list("pk", flat=True)
    assert sorted(reusable) == sorted([min(rows["a"], rows["b"]), rows["c"]])
    # ids assigned from now on come after every one handed out
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval(pg_get_serial_sequence('registry_schemaidentity', 'id'))")
        assert cursor.fetchone()[0] > max(rows.values())
    # the topic's mode now is each of its subjects' own
    modes = Topic.objects.get(name="payments").subject_modes
    assert modes == {"key": "READONLY", "value": "READONLY"}
    assert Topic.objects.get(name="refunds").subject_modes == {}


@pytest.mark.django_db(transaction=True)
def test_protobuf_fingerprints_are_computed_again_from_the_reference_text():
    executor = MigrationExecutor(connection)
    executor.migrate([("registry", "0020_reader_schema_references")])
    old = executor.loader.project_state([("registry", "0020_reader_schema_references")]).apps
    OldTopic, OldVersion, OldIdentity = (
        old.get_model("registry", "Topic"),
        old.get_model("registry", "SchemaVersion"),
        old.get_model("registry", "SchemaIdentity"),
    )
    # given: a Protobuf version kept with the fingerprint the earlier text gave it
    text = 'syntax = "proto3";\npackage acme;\n\nmessage Order {\n  string id = 1;\n}\n'
    identity = OldIdentity.objects.create(key="stale", schema_type="PROTOBUF")
    version = OldVersion.objects.create(
        topic=OldTopic.objects.create(name="orders"),
        version=1,
        schema_type="PROTOBUF",
        schema=text,
        canonical=text,
        text=text,
        fingerprint="stale",
        state="published",
        identity_id=identity.pk,
    )
    # when
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    # then: the schema sent again is found as the same schema, with the same id
    fingerprint = formats.parse("PROTOBUF", text).fingerprint
    assert SchemaVersion.objects.get(pk=version.pk).fingerprint == fingerprint
    assert SchemaIdentity.objects.get(pk=identity.pk).key == schema_identity_key(
        "PROTOBUF", fingerprint, [], (None, None)
    )
