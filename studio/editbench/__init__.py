"""The held-out edit benchmark in the studio: a stage's edits under two models, on the held-out
split."""
