"""App config for studio.accounts."""

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "studio.accounts"
    label = "accounts"
    default_auto_field = "django.db.models.BigAutoField"
