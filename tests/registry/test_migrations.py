"""Migrations that move data the registry has handed out: schema ids clients hold."""

import hashlib
import json
import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.registry import formats
from apps.registry.models import SchemaIdentity, SchemaVersion, Topic, schema_identity_key

BEFORE = [("registry", "0013_merge_references_and_readers")]
# the latest: the models the assertions use are the latest's, and so is what the test
# leaves the database at for the tests after it
AFTER = [("registry", "0025_avro_primitive_type_objects")]


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


@pytest.mark.django_db(transaction=True)
def test_avro_versions_holding_a_primitive_type_object_are_found_as_themselves_again():
    before = [("registry", "0024_schema_identity_guid")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    OldTopic, OldVersion, OldIdentity = (
        old.get_model("registry", "Topic"),
        old.get_model("registry", "SchemaVersion"),
        old.get_model("registry", "SchemaIdentity"),
    )
    # given: a version whose field type is {"type": "int"}, kept with the normal form and
    # fingerprint from before that was the same schema as "int"
    schema = {"type": "record", "name": "Order", "fields": [{"name": "n", "type": {"type": "int"}}]}
    stale = '{"fields":[{"name":"n","type":{"type":"int"}}],"name":"Order","type":"record"}'
    identity = OldIdentity.objects.create(key="stale", schema_type="AVRO")
    version = OldVersion.objects.create(
        topic=OldTopic.objects.create(name="orders"),
        version=1,
        schema_type="AVRO",
        schema=schema,
        canonical=stale,
        fingerprint=hashlib.sha256(stale.encode()).hexdigest(),
        state="published",
        identity_id=identity.pk,
    )
    # when
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    # then: the schema is found as itself, in either spelling, with the same id
    plain = {**schema, "fields": [{"name": "n", "type": "int"}]}
    parsed = formats.parse("AVRO", json.dumps(plain))
    kept = SchemaVersion.objects.get(pk=version.pk)
    assert (kept.fingerprint, kept.canonical) == (parsed.fingerprint, parsed.canonical)
    assert formats.parse("AVRO", json.dumps(schema)).fingerprint == parsed.fingerprint
    assert SchemaIdentity.objects.get(pk=identity.pk).key == schema_identity_key(
        "AVRO", parsed.fingerprint, [], (None, None)
    )


# the reference's own vector (SchemaValueTest.testSchemaValueMD5): this string, with an
# empty metadata and one migration rule of the default kind and mode
PINNED = (
    '{"type":"record","name":"myrecord","fields":[{"type":"string","default":null,"name":"f"}]}'
)
PINNED_CONTRACT = ({}, {"migrationRules": [{"kind": "TRANSFORM", "mode": "WRITEREAD"}]})
PINNED_GUID = "16f1eca5-ebf9-22b3-da80-212f8fa7342e"


@pytest.mark.django_db(transaction=True)
def test_each_id_handed_out_gets_the_guid_of_its_first_versions_content():
    before = [("registry", "0023_protobuf_numbers_as_written")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    OldTopic, OldVersion, OldIdentity, OldReference = (
        old.get_model("registry", "Topic"),
        old.get_model("registry", "SchemaVersion"),
        old.get_model("registry", "SchemaIdentity"),
        old.get_model("registry", "SchemaReference"),
    )
    topic = OldTopic.objects.create(name="ledger")

    def version(identity, number, text, role="value", **contract):
        return OldVersion.objects.create(
            topic=topic,
            role=role,
            version=number,
            schema_type="AVRO",
            schema={},
            canonical=text,
            text=text,
            fingerprint=f"f{identity.pk}.{number}",
            state="published",
            identity_id=identity.pk,
            **contract,
        )

    # given: an id with a data contract, given to two versions (the first's counts)
    pinned = OldIdentity.objects.create(key="pinned", schema_type="AVRO")
    first = version(pinned, 1, PINNED, metadata=PINNED_CONTRACT[0], rule_set=PINNED_CONTRACT[1])
    version(pinned, 2, '"string"')
    # an id whose schema references another subject's version
    referenced = version(OldIdentity.objects.create(key="r", schema_type="AVRO"), 1, '"int"', "key")
    referencing = OldIdentity.objects.create(key="referencing", schema_type="AVRO")
    OldReference.objects.create(
        version=version(referencing, 3, '"long"'), position=0, name="Id", referenced=referenced
    )
    # and an id no version has any more
    orphan = OldIdentity.objects.create(key="orphan", schema_type="AVRO")
    # when
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    # then: the reference's GUID of each first version's content
    assert str(SchemaIdentity.objects.get(pk=first.identity_id).guid) == PINNED_GUID
    expected = hashlib.md5(b'"long"Idledger-key' + (1).to_bytes(4, "big")).digest()
    assert SchemaIdentity.objects.get(pk=referencing.pk).guid == uuid.UUID(bytes=expected)
    # none for an id whose content is gone
    assert SchemaIdentity.objects.get(pk=orphan.pk).guid is None
