"""Policies behind one base class (``Policy``): local transformers, OpenAI-compatible, scripted.

``make_policy(spec)`` builds one from a string, ``role_model(role, spec)`` the model of a judge, a
diagnoser, the paraphraser or IFEval (``harness.policies.roles``: each role's timeout, retries,
usage); ``harness.model_cache`` holds the cached local checkpoints (default SmolLM2-135M-Instruct,
tiny model).
"""

from harness.policies.base import (
    GenerationSettings,
    Policy,
    PolicyError,
    PolicyOutput,
    ToolCall,
)
from harness.policies.factory import SPEC_HELP, make_policy, role_model
from harness.policies.roles import RoleModel
from harness.policies.scripted import ScriptedPolicy
from harness.policies.text_protocol import ParsedReply, parse_reply, strip_reasoning

__all__ = [
    "GenerationSettings",
    "ParsedReply",
    "Policy",
    "PolicyError",
    "PolicyOutput",
    "SPEC_HELP",
    "RoleModel",
    "ScriptedPolicy",
    "ToolCall",
    "make_policy",
    "parse_reply",
    "role_model",
    "strip_reasoning",
]
