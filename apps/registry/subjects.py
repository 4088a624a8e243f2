"""Schema Registry subjects as Kafka clients name them, and the topic and role each means.

A subject is read, never renamed, under the reference registry's three naming strategies:

- TopicNameStrategy: `<topic>-value` and `<topic>-key`;
- TopicRecordNameStrategy: `<topic>-<full record name>`;
- RecordNameStrategy: `<full record name>` alone.

The topic is any Kafka topic name (`[a-zA-Z0-9._-]`, 1-249 characters), Steward's own
dotted names (`orders.order`) among them. The role says what of the topic's messages the
schema describes: `value`, `key`, or `record:<name>`; a RecordNameStrategy subject is the
topic of the record's own name, so that `subject_of(*parse(s)) == s` for every subject.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}\Z")
# An Avro full name: dot-separated names (Avro's names have no '-', so the last '-' of a
# TopicRecordNameStrategy subject separates the topic from the record).
RECORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
VALUE, KEY, RECORD_PREFIX = "value", "key", "record:"


class InvalidSubject(ValueError):
    pass


@dataclass(frozen=True)
class Subject:
    topic: str
    role: str

    @property
    def name(self) -> str:
        return subject_of(self.topic, self.role)


def parse(subject: str) -> Subject:
    """The topic and role a subject names; InvalidSubject when it names none."""
    for role in (VALUE, KEY):
        suffix = f"-{role}"
        if subject.endswith(suffix) and TOPIC.match(subject[: -len(suffix)]):
            return Subject(subject[: -len(suffix)], role)
    if "-" in subject:
        topic, record = subject.rsplit("-", 1)
        if TOPIC.match(topic) and RECORD.match(record):
            return Subject(topic, RECORD_PREFIX + record)
    elif RECORD.match(subject) and TOPIC.match(subject):
        return Subject(subject, RECORD_PREFIX + subject)
    raise InvalidSubject(
        f"'{subject[:300]}' is not a subject: name one as '<topic>-value', '<topic>-key' "
        "(TopicNameStrategy), '<full record name>' (RecordNameStrategy) or "
        "'<topic>-<full record name>' (TopicRecordNameStrategy), the topic a Kafka topic "
        "name ([a-zA-Z0-9._-], 1-249 characters)."
    )


def subject_of(topic: str, role: str) -> str:
    if role in (VALUE, KEY):
        return f"{topic}-{role}"
    record = role.removeprefix(RECORD_PREFIX)
    return record if record == topic else f"{topic}-{record}"
