"""The registry's signals: what it tells the layers above it, and how it keeps its own
topic cache honest.

The registry sits beneath eventing and must not import it, yet creating a topic or a
subscription concerns eventing at once (Steward's consumers must follow a new topic,
and a new subscription needs its consumer group before its first event). So the
registry announces the two facts, after commit, and eventing connects its receivers
in its AppConfig.ready (`apps.eventing.signals`).
"""

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import Signal, receiver

from apps.registry.models import Topic
from apps.registry.selectors import forget_topic

# Sent, with `names=` (the new topics' names), once a transaction that created them has
# committed: `services.subscribe_steward_consumers_on_commit(names)`.
topics_created = Signal()

# Sent, with `subscription=`, once the transaction that created it has committed.
subscription_created = Signal()


@receiver(post_save, sender=Topic)
@receiver(post_delete, sender=Topic)
def topic_changed(sender, instance: Topic, created: bool = False, **kwargs) -> None:
    """Whatever path changed a topic (service, admin, shell)."""
    # Now, so this transaction's own emits see the change. A new topic's name may still
    # be cached by a transaction that made it and rolled back (resolve_topic caches the
    # rows a transaction reads, its own included): that entry goes now too.
    forget_topic(instance.name)
    if not created:
        # Again after commit, so a concurrent reader that cached the old row meanwhile
        # does not keep it. A new topic has no such reader: until this commits, every
        # other transaction finds no topic of its name, and resolve_topic caches none.
        transaction.on_commit(lambda: forget_topic(instance.name))
