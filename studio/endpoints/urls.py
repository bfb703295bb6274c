"""URLs of the endpoints app."""

from django.urls import path

from studio.endpoints import views

app_name = "endpoints"

urlpatterns = [
    path("", views.endpoint_list, name="endpoint_list"),
    path("new/", views.endpoint_create, name="endpoint_create"),
    path("<int:endpoint_id>/edit/", views.endpoint_edit, name="endpoint_edit"),
    path("<int:endpoint_id>/test/", views.endpoint_test, name="endpoint_test"),
]
