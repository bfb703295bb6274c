"""URLs of the compatibility app: the matrix, asking for a cell, naming the endpoint that serves a
label."""

from django.urls import path

from studio.compatibility import views

app_name = "compatibility"

urlpatterns = [
    path("", views.matrix_view, name="matrix"),
    path("cells/", views.cell_request_view, name="cell_request"),
    path("servers/", views.label_server_view, name="label_server"),
]
