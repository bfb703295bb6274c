"""URLs of the releases app (/release/...)."""

app_name = "releases"

urlpatterns: list = []
