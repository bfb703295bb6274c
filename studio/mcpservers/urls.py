"""URLs of the MCP servers app (admin only)."""

from django.urls import path

from studio.mcpservers import views

app_name = "mcpservers"

urlpatterns = [
    path("", views.server_list, name="server_list"),
    path("new/", views.server_create, name="server_create"),
    path("<int:server_id>/edit/", views.server_edit, name="server_edit"),
    path("<int:server_id>/delete/", views.server_delete, name="server_delete"),
]
