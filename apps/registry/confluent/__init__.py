"""The Confluent Schema Registry REST API, for unmodified Confluent-compatible clients.

Served under /api/schema-registry/, in the reference's media type. A subject is named
as Kafka clients name it (apps.registry.subjects: `<topic>-value`, `<topic>-key`,
`<record>`, `<topic>-<record>`, or any other name the reference accepts) and means a
Steward topic and a role; a schema id is a Steward schema version's id. Registering goes
through the same gate as ModelSync: a breaking schema answers 409 (40901), naming the
consumers that have not acknowledged it when any must. Registering never makes the
caller a producer of the topic (only ModelSync or an operator does), and on a topic that
has producers only they (and operators, and `registry:admin` tokens) may register or
change its subjects' levels and modes.

Errors take the registry's shape on every path (`errors`). Clients send HTTP Basic: the
service account's name and one of its tokens.

- `views`: thin views, each one call to the registry's services or selectors;
- `wire`: the bodies read and answered, as the reference registry writes them;
- `errors`: the reference registry's error codes, mapped once;
- `urls`: the paths, under /api/schema-registry/.
"""
