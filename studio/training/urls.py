"""URLs of the training app (/training/)."""

from django.urls import path

from studio.training import views

app_name = "training"

urlpatterns = [
    path("", views.run_list, name="run_list"),
    path("new/<str:kind>/", views.run_new, name="run_new"),
    path("new/<str:kind>/preview/", views.run_preview, name="run_preview"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/metrics.json", views.run_metrics, name="run_metrics"),
    path("runs/<int:run_id>/live/", views.run_live_view, name="run_live"),
    path("runs/<int:run_id>/resume/", views.run_resume_view, name="run_resume"),
    path("runs/<int:run_id>/endpoint/", views.checkpoint_endpoint, name="checkpoint_endpoint"),
    path("checkpoints/", views.checkpoint_list, name="checkpoint_list"),
    path("checkpoints/compare/", views.checkpoint_compare, name="checkpoint_compare"),
]
