"""Schema Registry subjects as Kafka clients name them, and the topic and role each means.

A subject is read, never renamed, under the reference registry's three naming strategies:

- TopicNameStrategy: `<topic>-value` and `<topic>-key`;
- TopicRecordNameStrategy: `<topic>-<full record name>`;
- RecordNameStrategy: `<full record name>` alone.

The topic is any Kafka topic name (`[a-zA-Z0-9._-]`, 1-249 characters), Steward's own
dotted names (`orders.order`) among them. The role says what of the topic's messages the
schema describes: `value`, `key`, or `record:<name>`; a RecordNameStrategy subject is the
topic of the record's own name, so that `subject_of(*parse(s)) == s` for every subject.

Any other name the reference registry accepts (a context-qualified `:.ctx:orders-value`,
a name with spaces or slashes) is a subject too: the topic named after it (its characters
Kafka refuses replaced by `_`), with the role `subject:<the name>`, so that it keeps its
own history and its own gate. Only an empty name, or one with a control character, is
no subject (the reference's 42208). The default context's qualifier (`:.:`) names the
plain subject; alone, it is the empty subject, no subject either, but where a setting's
path names it (`/config/:.:`, `/mode/:.:`), the registry's own (`names_registry`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}\Z")
# An Avro full name: dot-separated names (Avro's names have no '-', so the last '-' of a
# TopicRecordNameStrategy subject separates the topic from the record).
RECORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
VALUE, KEY, RECORD_PREFIX, OTHER_PREFIX = "value", "key", "record:", "subject:"
DEFAULT_CONTEXT = ":.:"
# What a role may hold (SchemaVersion.role): the longest subject outside the strategies.
ROLE_LENGTH = 255
NOT_IN_TOPIC_NAME = re.compile(r"[^a-zA-Z0-9._-]")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


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
    if not subject.removeprefix(DEFAULT_CONTEXT) or CONTROL.search(subject):
        raise InvalidSubject(f"The specified subject '{subject[:300]}' is not a valid.")
    subject = subject.removeprefix(DEFAULT_CONTEXT)
    strategy = _strategy(subject)
    if strategy is not None:
        return strategy
    if len(OTHER_PREFIX) + len(subject) > ROLE_LENGTH:
        raise InvalidSubject(
            f"The specified subject '{subject[:300]}' is not a valid: a subject outside the "
            f"naming strategies has at most {ROLE_LENGTH - len(OTHER_PREFIX)} characters."
        )
    topic = NOT_IN_TOPIC_NAME.sub("_", subject)[:249]
    return Subject(topic, OTHER_PREFIX + subject)


def names_registry(subject: str) -> bool:
    """Whether a setting's path names the default context itself (`:.:`, the empty
    subject in it): the registry's own config and mode, as the reference reads it."""
    return subject == DEFAULT_CONTEXT


def _strategy(subject: str) -> Subject | None:
    """The topic and role under one of the three naming strategies, if any names it."""
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
    return None


def context_of(subject: str) -> str:
    """The context a subject is in: `.` (the default), or the one a `:.ctx:` prefix names."""
    if subject.startswith(":.") and ":" in subject[2:]:
        return subject[1 : subject.index(":", 2)]
    return "."


def subject_of(topic: str, role: str) -> str:
    if role in (VALUE, KEY):
        return f"{topic}-{role}"
    if role.startswith(OTHER_PREFIX):
        return role.removeprefix(OTHER_PREFIX)
    record = role.removeprefix(RECORD_PREFIX)
    return record if record == topic else f"{topic}-{record}"
