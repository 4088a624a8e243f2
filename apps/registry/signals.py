"""Keep the topic cache honest whatever path changed a topic (service, admin, shell)."""

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from apps.registry.models import Topic
from apps.registry.selectors import forget_topic


@receiver(post_save, sender=Topic)
@receiver(post_delete, sender=Topic)
def topic_changed(sender, instance: Topic, **kwargs) -> None:
    # Now, so this transaction's own emits see the change, and again after commit, so a
    # concurrent reader that cached the old row meanwhile does not keep it.
    forget_topic(instance.name)
    transaction.on_commit(lambda: forget_topic(instance.name))
