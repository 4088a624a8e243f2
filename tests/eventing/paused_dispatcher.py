"""A dispatcher that stops between publish and delete, for the crash test to kill.

    python -m tests.eventing.paused_dispatcher MARKER

drains the outbox as `manage.py dispatch_outbox` does, through a Redis transport that,
once it has published a lane's batch, creates MARKER and sleeps: the test kills the
process there, deterministically, with the batch in the stream and still in the outbox.
"""

import os
import sys
import time
from pathlib import Path

import django


def main(marker: Path) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    django.setup()

    from apps.eventing import dispatcher
    from apps.eventing.transports import RedisStreamTransport

    class PauseAfterPublish(RedisStreamTransport):
        def publish(self, envelopes, **kwargs) -> None:
            super().publish(envelopes, **kwargs)
            if envelopes:
                marker.touch()
                time.sleep(3600)

    dispatcher.drain(transport=PauseAfterPublish())


if __name__ == "__main__":
    main(Path(sys.argv[1]))
