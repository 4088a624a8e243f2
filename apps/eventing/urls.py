from django.urls import path

from apps.eventing import views

app_name = "eventing"

urlpatterns = [
    path("", views.OverviewView.as_view(), name="overview"),
    path("dead-letters/", views.DeadLetterListView.as_view(), name="dead-letter-list"),
    path("dead-letters/<int:pk>/", views.DeadLetterDetailView.as_view(), name="dead-letter-detail"),
    path("dead-letters/<int:pk>/replay/", views.dead_letter_replay, name="dead-letter-replay"),
    path(
        "dead-letters/<int:pk>/progress/", views.dead_letter_progress, name="dead-letter-progress"
    ),
    path("dead-letters/<int:pk>/discard/", views.dead_letter_discard, name="dead-letter-discard"),
    path("effects/", views.UncertainEffectListView.as_view(), name="effect-list"),
    path("recent/", views.RecentEventListView.as_view(), name="recent-list"),
]
