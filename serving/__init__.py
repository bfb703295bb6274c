"""Serving: profiles (checkpoint + engine), the managed `transformers serve`
process, the SGLang launch command, and the deployment-replay benchmark.

The public names are re-exported here; `python -m serving --help` is the CLI.
"""

from serving.endpoint import Endpoint, GenerationSettings, open_endpoint
from serving.metrics import percentile, summarise, summarise_by_concurrency
from serving.profiles import ProfileError, ServingProfile, load_profiles, resolve_route
from serving.replay import ReplayPlan, RequestOutcome
from serving.service import rebuild_outputs, replay_run, runs_compare, runs_list
from serving.sglang import SGLangCommandError, SGLangLaunch, sglang_launch_argv, sglang_launch_shell
from serving.transformers_server import ServerStartError, TransformersServer

__all__ = [
    "Endpoint",
    "GenerationSettings",
    "ProfileError",
    "ReplayPlan",
    "RequestOutcome",
    "SGLangCommandError",
    "SGLangLaunch",
    "ServerStartError",
    "ServingProfile",
    "TransformersServer",
    "load_profiles",
    "open_endpoint",
    "percentile",
    "rebuild_outputs",
    "replay_run",
    "resolve_route",
    "runs_compare",
    "runs_list",
    "sglang_launch_argv",
    "sglang_launch_shell",
    "summarise",
    "summarise_by_concurrency",
]
