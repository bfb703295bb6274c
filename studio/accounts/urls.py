"""URLs of the accounts app."""

from django.urls import path

from studio.accounts import views

app_name = "accounts"

urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("tokens/", views.token_list, name="token_list"),
    path("tokens/<int:token_id>/revoke/", views.token_revoke, name="token_revoke"),
]
