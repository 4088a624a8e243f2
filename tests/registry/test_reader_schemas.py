"""A gate that knows its readers: a consumer's release declares the reader schema its
code reads a topic with (ModelSync or the API), a breaking version is checked against
each consumer's reader, and only the consumers whose reader cannot read it must
acknowledge (apps.registry.versions, reader schemas)."""

import json
import uuid

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from rest_framework.test import APIClient

from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import Conflict
from apps.core.scope import system_scope
from apps.eventing.models import OutboxEvent
from apps.registry import services
from apps.registry import versions as schemas
from apps.registry.catalog import install_steward_topics
from apps.registry.models import ReaderSchema, SchemaVersion, Service, Subscription, Topic
from apps.registry.news import AWAITING, PUBLISHED, news_topic
from apps.tenancy.models import AuditEvent
from tests.conftest import bearer
from tests.factories import service_token
from tests.query_counts import assert_flat_query_count
from tests.registry.factories import V1, V2_BREAKING, consumer, events, outcome, pending, sync

pytestmark = pytest.mark.django_db

TOPIC = "orders.order"
# Reads what V2_BREAKING writes: V2 only makes `total` required, which a reader that
# does not require it reads (a required entry removed, from the writer to the reader).
TOLERANT = V1
# Cannot read what V2_BREAKING writes: it requires `currency`, which V2 never writes.
STRICT_READER = {
    **V1,
    "properties": {**V1["properties"], "currency": {"type": "string"}},
    "required": ["id", "currency"],
}
CONSUMERS = ("alpha", "bravo", "charlie")


def declare(name, reader, *, release=None, schema_type="JSON", topic=TOPIC):
    """The consumer's release declares its reader through ModelSync."""
    service = Service.objects.get_or_create(name=name)[0]
    reads = [{"topic": topic, "schema": reader, "schema_type": schema_type}]
    answer = schemas.model_sync(
        actor=SYSTEM_ACTOR,
        service=service,
        release=release or f"{name}-{uuid.uuid4().hex[:6]}",
        topics=[],
        reads=reads,
    )
    [declared] = answer["reads"]
    return declared


def readers_declared():
    """v1 published for alpha, bravo and charlie; alpha's reader is tolerant of the
    breaking change, bravo's is not, charlie declares none."""
    sync("r1", V1, consumers=CONSUMERS)
    assert declare("alpha", TOLERANT)["outcome"] == "declared"
    assert declare("bravo", STRICT_READER)["outcome"] == "declared"


def by_consumer(readers):
    return {r["consumer"]: r for r in readers}


def test_only_the_consumers_whose_reader_cannot_read_a_breaking_version_must_acknowledge():
    # given
    readers_declared()
    # when
    answer = outcome(sync("r2", V2_BREAKING, consumers=CONSUMERS))
    # then
    assert answer["outcome"] == "awaiting_acknowledgement"
    assert answer["awaiting"] == ["bravo", "charlie"]
    assert answer["reads_it"] == ["alpha"]
    version = pending()
    assert version.awaiting_consumers == ["bravo", "charlie"]
    verdicts = by_consumer(version.reader_verdicts)
    alpha, bravo, charlie = verdicts["alpha"], verdicts["bravo"], verdicts["charlie"]
    assert alpha["reads"] is True and alpha["declared"] is True and alpha["breaking"] == []
    # alpha's verdict is explained: the difference its reader tolerates is named
    assert [d["path"] for d in alpha["differences"]] == ["#/required/total"]
    assert bravo["reads"] is False and bravo["breaking"]
    assert {d["path"] for d in bravo["breaking"]} == {"#/properties/currency"}
    assert "currency" in " ".join(d["message"] for d in bravo["breaking"])
    assert charlie == {"consumer": "charlie", **schemas.NO_READER}


def test_the_gate_publishes_once_the_consumers_that_must_acknowledge_have():
    readers_declared()
    sync("r2", V2_BREAKING, consumers=CONSUMERS)
    version = pending()
    assert schemas.acknowledge(
        actor=SYSTEM_ACTOR, version=version, consumer=consumer("bravo")
    ).state == ("awaiting_acknowledgement")
    # when the last consumer that must acknowledge does (alpha never does)
    done = schemas.acknowledge(actor=SYSTEM_ACTOR, version=version, consumer=consumer("charlie"))
    # then
    assert done.state == "published"
    assert Topic.objects.get(name=TOPIC).current_schema_version == 2
    assert [p["version"] for p in events(PUBLISHED)] == [1, 2]


def test_a_breaking_version_every_reader_reads_is_published_at_once():
    sync("r1", V1, consumers=("alpha",))
    declare("alpha", TOLERANT)
    answer = outcome(sync("r2", V2_BREAKING, consumers=("alpha",)))
    assert answer["outcome"] == "published" and answer["reads_it"] == ["alpha"]
    # the verdict still says what broke against v1, and who reads it anyway
    assert answer["verdict"]["compatible"] is False
    assert answer["verdict"]["readers"]["alpha"]["reads"] is True
    assert not SchemaVersion.objects.filter(state="awaiting_acknowledgement").exists()


def test_a_consumer_with_no_declared_reader_must_acknowledge_as_before():
    sync("r1", V1)
    answer = outcome(sync("r2", V2_BREAKING))
    assert answer["awaiting"] == ["billing", "ledger"] and "reads_it" not in answer
    assert {r["declared"] for r in pending().reader_verdicts} == {False}


def test_a_reader_declared_while_a_version_waits_releases_its_consumer_and_the_last_publishes():
    sync("r1", V1, consumers=("alpha", "bravo"))
    sync("r2", V2_BREAKING, consumers=("alpha", "bravo"))
    assert pending().awaiting_consumers == ["alpha", "bravo"]
    # a reader that cannot read it leaves bravo awaited, with its verdict
    answer = declare("bravo", STRICT_READER)
    assert answer["waiting"]["reads"] is False and answer["waiting"]["verdict"]["breaking"]
    assert pending().awaiting_consumers == ["alpha", "bravo"]
    # alpha's tolerant reader releases it
    answer = declare("alpha", TOLERANT)
    assert answer["waiting"]["reads"] is True and answer["waiting"]["state"] == (
        "awaiting_acknowledgement"
    )
    assert pending().awaiting_consumers == ["bravo"]
    # bravo's next release reads it: nobody is left, so it is published, once
    answer = declare("bravo", TOLERANT)
    assert answer["waiting"]["state"] == "published"
    assert SchemaVersion.objects.get(version=2).state == "published"
    assert [p["version"] for p in events(PUBLISHED)] == [1, 2]
    with system_scope():
        actions = list(
            AuditEvent.objects.filter(action="schema_version.reader_verdict")
            .order_by("pk")
            .values_list("changes", flat=True)
        )
    assert actions == [{"reads:alpha": [False, True]}, {"reads:bravo": [False, True]}]


def test_declaring_the_same_release_again_is_the_same_declaration_and_another_schema_is_refused():
    sync("r1", V1, consumers=("alpha",))
    first = declare("alpha", TOLERANT, release="a-1")
    assert declare("alpha", TOLERANT, release="a-1") == first  # the sync's answer, replayed
    # the same ModelSync replays its answer; a declaration of the same release through
    # the service is the same row
    reader, _ = schemas.reader_declare(
        actor=SYSTEM_ACTOR,
        service=consumer("alpha"),
        topic=Topic.objects.get(name=TOPIC),
        release="a-1",
        schema=TOLERANT,
    )
    assert ReaderSchema.objects.count() == 1 and reader.fingerprint == first["fingerprint"]
    with pytest.raises(Conflict) as refused:
        schemas.reader_declare(
            actor=SYSTEM_ACTOR,
            service=consumer("alpha"),
            topic=Topic.objects.get(name=TOPIC),
            release="a-1",
            schema=STRICT_READER,
        )
    assert refused.value.code == "release_changed" and ReaderSchema.objects.count() == 1


def test_a_bad_reader_in_a_model_sync_is_rejected_with_its_code_and_the_rest_goes_on():
    sync("r1", V1, consumers=("alpha",))
    sync("r1b", V1, consumers=("alpha",), name="orders.refund")
    answer = schemas.model_sync(
        actor=SYSTEM_ACTOR,
        service=consumer("alpha"),
        release="a-2",
        topics=[],
        reads=[
            {"topic": TOPIC, "schema": {"type": "no-such-type"}},
            {"topic": "orders.refund", "schema": TOLERANT},
            {"topic": "orders.nothing", "schema": TOLERANT},
        ],
    )
    bad, good, unknown = answer["reads"]
    assert bad["outcome"] == "rejected" and bad["code"] == "invalid_reader_schema"
    assert good["outcome"] == "declared"
    assert unknown["outcome"] == "rejected" and unknown["code"] == "unknown_topic"
    assert list(ReaderSchema.objects.values_list("topic__name", flat=True)) == ["orders.refund"]


# --------------------------------------------------------------------------- events


def test_the_events_carry_the_per_consumer_verdicts_and_only_those_to_act_are_awaiting():
    sync("r1", V1, consumers=CONSUMERS)
    for name in CONSUMERS:  # each can receive its news: a stream subscription
        services.subscription_create(
            actor=SYSTEM_ACTOR,
            consumer=consumer(name),
            topic=Topic.objects.get(name=TOPIC),
            transport=Subscription.Transport.REDIS_STREAM,
        )
    declare("alpha", TOLERANT)
    declare("bravo", STRICT_READER)
    sync("r2", V2_BREAKING, consumers=CONSUMERS)
    [shared] = events(AWAITING)
    assert shared["awaiting"] == ["bravo", "charlie"] and shared["reads_it"] == ["alpha"]
    assert shared["verdict"]["readers"]["alpha"]["reads"] is True
    assert shared["verdict"]["readers"]["bravo"]["reads"] is False
    with system_scope():
        copies = {
            e.payload["addressee"]: e.payload
            for e in OutboxEvent.objects.filter(
                topic__in=[news_topic(n) for n in CONSUMERS], event_type=AWAITING
            )
        }
    assert sorted(copies) == list(CONSUMERS)
    for name, copy in copies.items():
        assert copy["awaiting"] == ["bravo", "charlie"]
        # each copy carries its addressee's own verdict
        assert copy["reader"] == shared["verdict"]["readers"][name]
    assert copies["alpha"]["reader"]["reads"] is True
    assert copies["charlie"]["reader"]["declared"] is False


def test_a_reminder_goes_only_to_the_consumers_that_must_acknowledge():
    readers_declared()
    sync("r2", V2_BREAKING, consumers=CONSUMERS)
    assert schemas.remind(actor=SYSTEM_ACTOR, version=pending()) == ["bravo", "charlie"]
    reminder = events(AWAITING)[-1]
    assert reminder["reminder"] is True and reminder["awaiting"] == ["bravo", "charlie"]


# --------------------------------------------------------------------------- API


def readers_url(topic=TOPIC):
    return f"/api/v1/registry/topics/{topic}/readers/"


def client_for(name):
    return bearer(APIClient(), service_token(scopes=["registry:read", "registry:write"], name=name))


def test_a_consumer_declares_its_reader_through_the_api_and_the_version_shows_verdicts():
    sync("r1", V1, consumers=CONSUMERS)
    alpha, bravo = client_for("alpha"), client_for("bravo")
    body = {"release": "alpha-7", "schema": TOLERANT}
    answer = alpha.post(readers_url(), body, format="json")
    assert answer.status_code == 201, answer.content
    reader = answer.json()["reader"]
    assert reader["service"] == "alpha" and reader["release"] == "alpha-7"
    assert reader["schema_type"] == "JSON" and answer.json()["waiting"] is None
    strict = bravo.post(readers_url(), {"release": "b-1", "schema": STRICT_READER}, format="json")
    assert strict.status_code == 201
    # the reader in force per consumer
    listed = alpha.get(readers_url()).json()
    assert [(r["service"], r["release"]) for r in listed] == [
        ("alpha", "alpha-7"),
        ("bravo", "b-1"),
    ]
    sync("r2", V2_BREAKING, consumers=CONSUMERS)
    shown = alpha.get(f"/api/v1/registry/schema-versions/{pending().pk}/").json()
    assert shown["awaiting"] == ["bravo", "charlie"] and shown["reads_it"] == ["alpha"]
    verdicts = by_consumer(shown["readers"])
    assert verdicts["alpha"]["reads"] and verdicts["alpha"]["release"] == "alpha-7"
    assert not verdicts["bravo"]["reads"] and verdicts["bravo"]["breaking"]


def test_the_readers_list_query_count_does_not_grow():
    sync("r1", V1, consumers=CONSUMERS)
    client = client_for("observer")

    def add_rows(n):
        for _ in range(n):
            name = f"c-{uuid.uuid4().hex[:6]}"
            topic = Topic.objects.get(name=TOPIC)
            topic.consumers.add(Service.objects.create(name=name))
            declare(name, TOLERANT)

    client.get(readers_url())  # the token's first use is recorded once, not per list
    assert_flat_query_count(add_rows, lambda: client.get(readers_url()))


def test_model_sync_through_the_api_declares_readers():
    sync("r1", V1, consumers=("alpha",))
    body = {"release": "alpha-9", "reads": [{"topic": TOPIC, "schema": TOLERANT}]}
    alpha = client_for("alpha")
    answer = alpha.post("/api/v1/registry/model-sync/", body, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["reads"][0]["outcome"] == "declared"
    assert ReaderSchema.objects.get().release == "alpha-9"
    empty = alpha.post("/api/v1/registry/model-sync/", {"release": "alpha-10"}, format="json")
    assert empty.status_code == 400


def _nothing_changed(before):
    with system_scope():
        now = (ReaderSchema.objects.count(), Service.objects.count(), AuditEvent.objects.count())
    assert now == before


@pytest.mark.parametrize(
    ("caller", "body", "status", "code"),
    [
        (
            "alpha",
            {"release": "a", "schema": {"type": "no-such-type"}},
            422,
            "invalid_reader_schema",
        ),
        ("alpha", {"release": "a", "schema": "{not json"}, 422, "invalid_reader_schema"),
        (
            "alpha",
            {"release": "a", "schema_type": "AVRO", "schema": {"type": "record"}},
            422,
            "invalid_reader_schema",
        ),
        ("outsider", {"release": "a", "schema": TOLERANT}, 422, "not_a_consumer"),
        ("alpha", {"release": "a", "schema": TOLERANT, "service": "bravo"}, 403, None),
        (
            "alpha",
            {"release": "a", "schema": TOLERANT, "schema_type": "PROTOBUF"},
            422,
            "invalid_reader_schema",
        ),
        ("alpha", {"release": "a", "schema": TOLERANT, "schema_type": "XSD"}, 400, None),
        ("alpha", {"schema": TOLERANT}, 400, None),
    ],
)
def test_a_bad_reader_declaration_is_refused_with_a_stable_code_and_changes_nothing(
    caller, body, status, code
):
    sync("r1", V1, consumers=("alpha", "bravo"))
    client = client_for(caller)
    with system_scope():
        before = (ReaderSchema.objects.count(), Service.objects.count(), AuditEvent.objects.count())
    refused = client.post(readers_url(), body, format="json")
    assert refused.status_code == status, refused.content
    assert refused["Content-Type"].startswith("application/problem+json")
    if code:
        assert refused.json()["code"] == code
    _nothing_changed(before)


def test_an_operator_names_an_unknown_consumer_and_no_service_is_made(platform_token):
    sync("r1", V1, consumers=("alpha",))
    client = bearer(APIClient(), platform_token)
    with system_scope():
        before = (ReaderSchema.objects.count(), Service.objects.count(), AuditEvent.objects.count())
    refused = client.post(
        readers_url(), {"release": "a", "schema": TOLERANT, "service": "ghost"}, format="json"
    )
    assert refused.status_code in (403, 422)
    _nothing_changed(before)


# --------------------------------------------------------------------------- console


def test_the_version_page_shows_each_consumers_verdict(client, operator):
    readers_declared()
    sync("r2", V2_BREAKING, consumers=CONSUMERS)
    client.force_login(operator)
    text = client.get(pending().get_absolute_url()).content.decode()
    assert "Waiting on: bravo, charlie" in text
    assert "Reads it: alpha." in text
    table = text[text.index('id="readers"') :]
    table = table[: table.index("</table>")]
    rows = {name: table[table.index(f"<td>{name}</td>") :].split("</tr>")[0] for name in CONSUMERS}
    assert "reads it" in rows["alpha"] and "must acknowledge" not in rows["alpha"]
    assert "must acknowledge" in rows["bravo"] and "breaks it" in rows["bravo"]
    assert "must acknowledge" in rows["charlie"] and "none declared" in rows["charlie"]


def test_the_approvals_list_shows_who_reads_it_beside_who_it_waits_on(client, operator):
    readers_declared()
    sync("r2", V2_BREAKING, consumers=CONSUMERS)
    client.force_login(operator)
    page = client.get("/registry/approvals/")
    [row] = page.context["object_list"]
    assert (row.awaiting_names, row.reads_it_names) == ("bravo, charlie", "alpha")
    assert "Reads it" in page.content.decode()


# --------------------------------------------------------------------------- Avro

AVRO_V1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}
# breaking under BACKWARD: a field without a default, which v1's data lacks
AVRO_V2 = {**AVRO_V1, "fields": [*AVRO_V1["fields"], {"name": "total", "type": "long"}]}
# cannot read v2's data: it needs `currency`, which v2 never writes, with no default
AVRO_STRICT = {**AVRO_V1, "fields": [*AVRO_V1["fields"], {"name": "currency", "type": "string"}]}


def avro_sync(release, schema, consumers=("alpha", "bravo", "charlie")):
    producer = Service.objects.get_or_create(name="orders")[0]
    topics = [
        {
            "name": "orders.avro",
            "consumers": list(consumers),
            "schema": schema,
            "schema_type": "AVRO",
        }
    ]
    return schemas.model_sync(actor=SYSTEM_ACTOR, service=producer, release=release, topics=topics)


def test_avro_readers_are_judged_by_avro_resolution():
    avro_sync("r1", AVRO_V1)
    declare("alpha", AVRO_V1, schema_type="AVRO", topic="orders.avro")
    declare("bravo", AVRO_STRICT, schema_type="AVRO", topic="orders.avro")
    answer = outcome(avro_sync("r2", AVRO_V2), "orders.avro")
    assert answer["outcome"] == "awaiting_acknowledgement"
    assert answer["awaiting"] == ["bravo", "charlie"] and answer["reads_it"] == ["alpha"]
    verdicts = answer["verdict"]["readers"]
    assert verdicts["alpha"]["reads"] is True
    assert verdicts["bravo"]["reads"] is False
    assert "currency" in " ".join(d["message"] for d in verdicts["bravo"]["breaking"])


def test_a_release_syncs_avro_payloads_and_avro_readers_through_the_api():
    # given: a producer's release declares its topic's payload in Avro, through the API
    orders = client_for("orders")
    topic = {"name": "orders.avro", "consumers": ["alpha", "bravo"], "schema_type": "AVRO"}
    first = orders.post(
        "/api/v1/registry/model-sync/",
        {"release": "o-1", "topics": [{**topic, "schema": AVRO_V1}]},
        format="json",
    )
    assert first.status_code == 200, first.content
    assert first.json()["topics"][0]["outcome"] == "published"
    assert SchemaVersion.objects.get(topic__name="orders.avro").schema_type == "AVRO"
    # and its consumers' releases declare their Avro readers, the Avro text form too
    for name, reader in (("alpha", json.dumps(AVRO_V1)), ("bravo", AVRO_STRICT)):
        body = {
            "release": f"{name}-1",
            "reads": [{"topic": "orders.avro", "schema_type": "AVRO", "schema": reader}],
        }
        declared = client_for(name).post("/api/v1/registry/model-sync/", body, format="json")
        assert declared.json()["reads"][0]["outcome"] == "declared", declared.content
    # when: the producer's next release breaks Avro resolution
    second = orders.post(
        "/api/v1/registry/model-sync/",
        {"release": "o-2", "topics": [{**topic, "schema": AVRO_V2}]},
        format="json",
    )
    # then: only the consumer whose Avro reader cannot read it must acknowledge, with the
    # Avro verdicts explained
    answer = second.json()["topics"][0]
    assert answer["outcome"] == "awaiting_acknowledgement"
    assert (answer["awaiting"], answer["reads_it"]) == (["bravo"], ["alpha"])
    [breaking] = answer["verdict"]["breaking"]
    assert breaking["kind"] == "READER_FIELD_MISSING_DEFAULT_VALUE"
    assert "total" in breaking["message"]
    bravo = answer["verdict"]["readers"]["bravo"]
    assert bravo["reads"] is False and "currency" in bravo["breaking"][0]["message"]
    # a JSON Schema for the Avro topic is rejected, naming both types
    wrong = orders.post(
        "/api/v1/registry/model-sync/",
        {"release": "o-3", "topics": [{**topic, "schema_type": "JSON", "schema": V1}]},
        format="json",
    )
    assert wrong.json()["topics"][0]["outcome"] == "rejected"
    assert "AVRO, not JSON" in wrong.json()["topics"][0]["reason"]


def test_a_reader_of_another_schema_type_cannot_vouch_for_a_version():
    avro_sync("r1", AVRO_V1, consumers=("alpha",))
    declare("alpha", {"type": "object"}, topic="orders.avro")  # JSON Schema, on Avro data
    answer = outcome(avro_sync("r2", AVRO_V2, consumers=("alpha",)), "orders.avro")
    assert answer["awaiting"] == ["alpha"]
    assert "AVRO" in answer["verdict"]["readers"]["alpha"]["reason"]


# --------------------------------------------------------------------------- Schema Registry API


@pytest.mark.django_db(transaction=True)
def test_a_confluent_client_registering_a_breaking_schema_hears_only_who_must_acknowledge(
    live_server,
):
    install_steward_topics()
    issued = service_token(scopes=["registry:write"], name="orders")
    sync("r1", V1, consumers=CONSUMERS)
    declare("alpha", TOLERANT)
    with SchemaRegistryClient(
        {
            "url": f"{live_server.url}/api/schema-registry",
            "basic.auth.user.info": f"orders:{issued.secret}",
        }
    ) as client:
        with pytest.raises(SchemaRegistryError) as refused:
            client.register_schema(f"{TOPIC}-value", Schema(json.dumps(V2_BREAKING), "JSON"))
    assert refused.value.http_status_code == 409
    message = refused.value.error_message
    assert "bravo, charlie" in message and "alpha" not in message
    assert pending().reads_it == ["alpha"]
