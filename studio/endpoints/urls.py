"""URLs of the endpoints app."""

from django.urls import path

from studio.endpoints import views

app_name = "endpoints"

urlpatterns = [
    path("", views.endpoint_list, name="endpoint_list"),
    path("new/", views.endpoint_create, name="endpoint_create"),
    path("roles/", views.role_set, name="role_set"),
    path("<int:endpoint_id>/edit/", views.endpoint_edit, name="endpoint_edit"),
    path("<int:endpoint_id>/test/", views.endpoint_test, name="endpoint_test"),
    path("secrets/", views.secret_list, name="secret_list"),
    path("secrets/new/", views.secret_create, name="secret_create"),
    path("secrets/<int:secret_id>/edit/", views.secret_edit, name="secret_edit"),
    path("secrets/<int:secret_id>/delete/", views.secret_delete, name="secret_delete"),
]
