"""A small JSON API with token authentication for scripts and CI."""
