"""URLs of the traffic pages: one name per action."""

from django.urls import path

from studio.traffic import views

app_name = "traffic"

urlpatterns = [
    path("", views.traffic_list, name="traffic_list"),
    path("<int:trajectory_id>/", views.traffic_detail, name="traffic_detail"),
    path("deployments/", views.deployment_list, name="deployment_list"),
    path("deployments/new/", views.deployment_create_view, name="deployment_create"),
    path("deployments/<slug:name>/tokens/", views.token_create_view, name="token_create"),
    path("tokens/<int:token_id>/revoke/", views.token_revoke_view, name="token_revoke"),
]
