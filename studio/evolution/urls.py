"""URLs of the evolution app: one name per action."""

from django.urls import path

from studio.evolution import views

app_name = "evolution"

urlpatterns = [
    path("", views.evolution_list, name="evolution_list"),
    path("new/", views.evolution_new, name="evolution_new"),
    path("<int:evolution_id>/", views.evolution_detail, name="evolution_detail"),
    path("datasets/", views.dataset_list, name="dataset_list"),
    path("datasets/import/", views.dataset_import_view, name="dataset_import"),
    path("datasets/<slug:name>/", views.dataset_detail, name="dataset_detail"),
    path("datasets/<slug:name>/cases/<str:case_id>/", views.dataset_case, name="dataset_case"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/status/", views.run_status, name="run_status"),
    path("runs/<int:run_id>/resume/", views.run_resume, name="run_resume"),
    path("runs/<int:run_id>/cases/<str:case_id>/", views.run_case, name="run_case"),
    path("stages/<int:stage_id>/", views.stage_detail, name="stage_detail"),
    path("stages/<int:stage_id>/status/", views.stage_status, name="stage_status"),
    path("stages/<int:stage_id>/diagnose/", views.stage_diagnose, name="stage_diagnose"),
    path("stages/<int:stage_id>/candidate/", views.stage_candidate, name="stage_candidate"),
    path("stages/<int:stage_id>/edit/", views.stage_edit, name="stage_edit"),
    path(
        "stages/<int:stage_id>/candidate/reject/",
        views.stage_candidate_reject,
        name="stage_candidate_reject",
    ),
    path("stages/<int:stage_id>/decide/", views.stage_decide_view, name="stage_decide"),
    path("proposals/<int:proposal_id>/review/", views.proposal_review_view, name="proposal_review"),
    path("proposals/<int:proposal_id>/edit/", views.proposal_edit, name="proposal_edit"),
]
