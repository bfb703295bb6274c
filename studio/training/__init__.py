"""The ML engineer's part of the studio: training, checkpoint evaluation and replay runs, their
dashboards and the checkpoint registry, over the training/ and serving/ libraries' own commands."""
