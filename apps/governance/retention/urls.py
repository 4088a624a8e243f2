from django.urls import path

from apps.governance.retention import views

app_name = "retention"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("sweeps/run/", views.sweep_now, name="sweep-now"),
    path("sweeps/progress/", views.sweep_progress, name="sweep-progress"),
    path("preview/", views.preview, name="preview"),
    path("rules/", views.RuleListView.as_view(), name="rule-list"),
    path("rules/new/", views.rule_edit, name="rule-new"),
    path("rules/<int:pk>/", views.rule_edit, name="rule-edit"),
    path("rules/<int:pk>/delete/", views.rule_delete, name="rule-delete"),
    path("holds/", views.HoldListView.as_view(), name="hold-list"),
    path("holds/new/", views.hold_new, name="hold-new"),
    path("holds/<uuid:pk>/", views.hold_detail, name="hold-detail"),
]
