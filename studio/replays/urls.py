"""URLs of the replays app (/replay/...)."""

app_name = "replays"

urlpatterns: list = []
