"""The traffic API's URL (under /api/v1/deployments/)."""

from django.urls import path

from studio.traffic import api

app_name = "traffic_api"

urlpatterns = [
    path("<slug:name>/trajectories/", api.trajectories_post, name="trajectories_post"),
]
