from django.urls import path

from apps.stores import views

app_name = "stores"

urlpatterns = [
    path("", views.BindingListView.as_view(), name="binding-list"),
    path("bindings/<uuid:pk>/", views.BindingDetailView.as_view(), name="binding-detail"),
    path("bindings/<uuid:pk>/<str:act>/", views.binding_act, name="binding-act"),
    path("rules/", views.RuleListView.as_view(), name="rule-list"),
    path("rules/new/", views.rule_edit, name="rule-new"),
    path("rules/<int:pk>/", views.rule_edit, name="rule-edit"),
    path("what-if/", views.what_if, name="what-if"),
    path("certifications/", views.CertificationListView.as_view(), name="certification-list"),
    path("evidence/benchmarks/", views.BenchmarkListView.as_view(), name="benchmark-list"),
    path(
        "evidence/contract-tests/",
        views.ContractTestListView.as_view(),
        name="contract-test-list",
    ),
    path("evidence/policies/", views.PolicyListView.as_view(), name="policy-list"),
    path("evidence/pilots/", views.PilotListView.as_view(), name="pilot-list"),
    path(
        "evidence/pilots/new/",
        views.record_evidence,
        {"kind": "pilot"},
        name="evidence-record-pilot",
    ),
    path(
        "evidence/benchmarks/new/",
        views.record_evidence,
        {"kind": "benchmark"},
        name="evidence-record-benchmark",
    ),
    path(
        "evidence/contract-tests/new/",
        views.record_evidence,
        {"kind": "contract-test"},
        name="evidence-record-contract-test",
    ),
    path(
        "evidence/policies/new/",
        views.record_evidence,
        {"kind": "policy"},
        name="evidence-record-policy",
    ),
]
