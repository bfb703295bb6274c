"""Deployment-replay dashboards: the replays the studio ran, per concurrency, side by side, and each
run's record."""
