from django.apps import AppConfig


class AttentionConfig(AppConfig):
    name = "apps.attention"
    label = "attention"
    verbose_name = "Attention queue"
