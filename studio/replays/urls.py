"""URLs of the replays app (/replay/...)."""

from django.urls import path

from studio.replays import views

app_name = "replays"

urlpatterns = [
    path("", views.replay_list, name="replay_list"),
    path("compare/", views.replay_compare, name="replay_compare"),
    path("<int:run_id>/", views.replay_detail, name="replay_detail"),
]
