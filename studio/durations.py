"""The studio's one way of saying how long something takes or has left ("about 7 min left"): the
training dashboards, the replay form's estimate and the evaluation runs' progress all say it so."""

from __future__ import annotations


def about(seconds: float | None) -> str:
    """``about 40 s`` under 90 s, ``about 7 min`` under 90 min, else ``about 1.6 h``; "" for
    None."""
    if seconds is None:
        return ""
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    if seconds < 5400:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


def time_left(seconds: float | None) -> str:
    """What is left of a running thing: ``about 7 min left``, or "" when nobody knows yet."""
    return f"{about(seconds)} left" if seconds is not None else ""
