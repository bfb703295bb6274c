"""The playground's and the run pages' trajectory shows each model call's cached prompt tokens."""

from django.template.loader import render_to_string

from studio.presenters import trajectory_steps


def test_a_model_calls_cached_tokens_are_shown_and_absent_when_not_reported():
    traj = {
        "rounds": 2,
        "route": "public",
        "outcome": "replied",
        "reply": "hi",
        "model_calls": [
            {
                "seq": 1,
                "round": 1,
                "text": "a",
                "latency_s": 1.0,
                "input_tokens": 1666,
                "output_tokens": 20,
                "ttft_s": 0.9,
                "cached_tokens": 1353,
            },
            {
                "seq": 3,
                "round": 2,
                "text": "b",
                "latency_s": 0.5,
                "input_tokens": 1742,
                "output_tokens": 9,
                "ttft_s": 0.2,
                "cached_tokens": None,
            },
        ],
    }
    page = render_to_string(
        "playground/_trajectory.html", {"traj": traj, "steps": trajectory_steps(traj), "run": {}}
    )
    assert '1666 in (<span class="cached-tokens">1353 cached</span>) / 20 out' in page
    assert "1742 in / 9 out" in page
