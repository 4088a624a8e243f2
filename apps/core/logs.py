"""Log lines as JSON, with the request id that follows a request into the Celery tasks
and events it causes, and with secrets masked whatever the code that logged them.

`STEWARD_LOG_FORMAT=json` (the default in production) writes one JSON object per line:
`time`, `level`, `logger`, `message`, `request_id`, the Celery `task` and `task_id`
when in a worker, and `exception`. `plain` is for reading in a terminal.
"""

from __future__ import annotations

import json
import logging
import re
import time

from apps.core.context import request_id

# Whatever slips into a message: API tokens, Authorization values, credentials in
# URLs and key=value pairs. Masking happens on the formatted line, so it covers
# arguments, exceptions and tracebacks alike.
_SECRETS = [
    (re.compile(r"\b(stw_[0-9a-f]{8}_)[A-Za-z0-9_-]{8,}"), r"\1[redacted]"),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 [redacted]"),
    (re.compile(r"(?i)(://[^:/\s@]*:)[^@\s]+@"), r"\1[redacted]@"),
    (
        re.compile(
            r"(?i)\b(password|passwd|secret|token|api[_-]?key|signature)(\"?\s*[=:]\s*\"?)[^\s\"',&}]+"
        ),
        r"\1\2[redacted]",
    ),
]


def mask(text: str) -> str:
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def _task():
    try:
        from celery import current_task
    except ImportError:  # pragma: no cover - Celery is a dependency
        return None
    return current_task if current_task and current_task.request.id else None


class JsonFormatter(logging.Formatter):
    converter = time.gmtime  # the "Z" in the time field means it

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": mask(record.getMessage()),
        }
        rid = request_id.get()
        if rid:
            line["request_id"] = rid
        task = _task()
        if task is not None:
            line["task"], line["task_id"] = task.name, task.request.id
        if record.exc_info:
            line["exception"] = mask(self.formatException(record.exc_info))
        return json.dumps(line, default=str)


class PlainFormatter(logging.Formatter):
    def __init__(self):
        super().__init__("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        record.request_id = request_id.get() or "-"
        return mask(super().format(record))
