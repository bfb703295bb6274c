"""The SGLang launch command for serving a checkpoint on one GPU (docs/architecture.md §9).

SGLang cannot run on the CPU machines this project is developed on (it pins its
own torch and transformers and needs CUDA), so serving/ does not start it: it
generates the exact `python -m sglang.launch_server ...` command, validates
every value it puts in it, and the replay then talks to the running server over
its OpenAI-compatible API. The speculative settings are the report's: NEXTN
(the model's MTP head) with 3 steps, top-k 1 and 4 draft tokens. An adapted
draft head (``python -m training mtp``) is validated when its folder is on this
host (``check_draft_head``), and its layout picks the algorithm: EAGLE for a
Llama-family policy's head, NEXTN for a model that ships MTP layers.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

# Values SGLang 0.5.x accepts for the flags below (server_args.py choices).
SGLANG_DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")
DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
SPECULATIVE_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")
REASONING_PARSERS = (
    "deepseek-r1",
    "deepseek-v3",
    "glm45",
    "gpt-oss",
    "kimi",
    "qwen3",
    "qwen3-thinking",
    "step3",
)
TOOL_CALL_PARSERS = (
    "deepseekv3",
    "deepseekv31",
    "glm",
    "glm45",
    "glm47",
    "gpt-oss",
    "kimi_k2",
    "llama3",
    "mistral",
    "pythonic",
    "qwen",
    "qwen25",
    "qwen3_coder",
    "step3",
)


class SGLangCommandError(ValueError):
    """An SGLang launch setting SGLang would reject; lists every problem found."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__(
            "invalid SGLang launch settings:\n" + "\n".join(f"  - {p}" for p in problems)
        )


@dataclass(frozen=True)
class SGLangLaunch:
    """Everything the SGLang launch command is built from.

    The defaults are the report's serving setup for a Qwen3.6-style checkpoint:
    BF16 on one GPU, Qwen3 reasoning and Qwen3-coder tool-call parsing, NEXTN
    speculative decoding (3 steps, top-k 1, 4 draft tokens).
    """

    model_path: str
    """Checkpoint folder (or hub id) of the policy to serve."""
    draft_head: str | None = None
    """Adapted MTP draft head (a folder); omitted = the checkpoint's own NextN head."""
    served_model_name: str | None = None
    """Name clients send as `model`; defaults to the folder name of model_path."""
    host: str = "0.0.0.0"
    port: int = 30000
    dtype: str = "bfloat16"
    tool_call_parser: str | None = "qwen3_coder"
    reasoning_parser: str | None = "qwen3"
    speculative_algorithm: str | None = "NEXTN"
    speculative_num_steps: int = 3
    speculative_eagle_topk: int = 1
    speculative_num_draft_tokens: int = 4
    speculative_token_map: str | None = None
    """The draft head's reduced vocabulary (its hot_token_map.pt), when it has one."""
    tp_size: int = 1
    mem_fraction_static: float | None = None
    context_length: int | None = None
    trust_remote_code: bool = False
    api_key_env: str | None = None
    """If set, the command reads the server API key from this environment variable."""
    extra_args: tuple[str, ...] = field(default_factory=tuple)
    """Further `--flag value` tokens, passed through after the flag-name check."""

    @property
    def model_name(self) -> str:
        return self.served_model_name or Path(self.model_path.rstrip("/")).name or self.model_path


def validate_launch(launch: SGLangLaunch, *, check_paths: bool = False) -> list[str]:
    """Every problem in `launch`, as messages naming the setting and what is valid."""
    problems: list[str] = []
    if not launch.model_path.strip():
        problems.append("model_path: empty; give the checkpoint folder or hub id")
    dtype = DTYPE_ALIASES.get(launch.dtype, launch.dtype)
    if dtype not in SGLANG_DTYPES:
        problems.append(
            f"dtype: {launch.dtype!r} is not one of {', '.join(SGLANG_DTYPES)} (or bf16/fp16/fp32)"
        )
    if launch.tool_call_parser is not None and launch.tool_call_parser not in TOOL_CALL_PARSERS:
        problems.append(
            f"tool_call_parser: {launch.tool_call_parser!r} "
            f"is not one of {', '.join(TOOL_CALL_PARSERS)}"
        )
    if launch.reasoning_parser is not None and launch.reasoning_parser not in REASONING_PARSERS:
        problems.append(
            f"reasoning_parser: {launch.reasoning_parser!r} "
            f"is not one of {', '.join(REASONING_PARSERS)}"
        )
    if not 1 <= launch.port <= 65535:
        problems.append(f"port: {launch.port} is outside 1..65535")
    if launch.tp_size < 1:
        problems.append(f"tp_size: {launch.tp_size} must be >= 1")
    if launch.mem_fraction_static is not None and not 0.0 < launch.mem_fraction_static < 1.0:
        problems.append(f"mem_fraction_static: {launch.mem_fraction_static} must be in (0, 1)")
    if launch.context_length is not None and launch.context_length < 1:
        problems.append(f"context_length: {launch.context_length} must be >= 1")
    algo = launch.speculative_algorithm
    if algo is not None:
        if algo not in SPECULATIVE_ALGORITHMS:
            problems.append(
                f"speculative_algorithm: {algo!r} is not one of {', '.join(SPECULATIVE_ALGORITHMS)}"
            )
        for name in (
            "speculative_num_steps",
            "speculative_eagle_topk",
            "speculative_num_draft_tokens",
        ):
            if getattr(launch, name) < 1:
                problems.append(f"{name}: {getattr(launch, name)} must be >= 1")
        # With top-k 1 the draft is a chain: SGLang needs num_steps + 1 draft tokens.
        if (
            launch.speculative_eagle_topk == 1
            and launch.speculative_num_draft_tokens != launch.speculative_num_steps + 1
        ):
            problems.append(
                "speculative_num_draft_tokens: with speculative_eagle_topk 1 it must be "
                f"speculative_num_steps + 1 = {launch.speculative_num_steps + 1}, "
                f"not {launch.speculative_num_draft_tokens}"
            )
    elif launch.draft_head is not None:
        problems.append(
            "draft_head: given, but speculative_algorithm "
            "is None; a draft head needs EAGLE or NEXTN"
        )
    if check_paths:
        from harness.checkpoints import checkpoint_problem

        if problem := checkpoint_problem(launch.model_path):
            problems.append(f"model_path: {problem} on this host")
        if launch.draft_head is not None and not Path(launch.draft_head).is_dir():
            problems.append(f"draft_head: {launch.draft_head} is not a folder on this host")
    bad_extra = [t for t in launch.extra_args[::2] if not t.startswith("--")]
    if bad_extra:
        problems.append(f"extra_args: expected '--flag value' pairs, got {bad_extra}")
    return problems


# The speculative algorithm SGLang serves a draft head of each layout with
# (serving.engine.draft_head).
ALGORITHM_FOR_LAYOUT = {"eagle": "EAGLE", "nextn": "NEXTN"}
# Model families SGLang 0.5.x serves with NEXTN: those that ship MTP layers (deepseek_nextn.py,
# qwen3_next_mtp.py, glm4_moe_nextn.py, ...). A Llama-family policy's head is served as EAGLE.
NEXTN_FAMILIES = ("Deepseek", "Qwen3Next", "Qwen3_5", "Glm4Moe", "MiMo", "BailingMoe", "ExaoneMoe")


def check_draft_head(
    head_dir: str | Path, model_path: str | Path | None = None
) -> tuple[str | None, list[str]]:
    """Validate an adapted draft-head folder for serving: the speculative algorithm its layout needs
    and every problem (tensor names and shapes, dimensions against the policy, the policy
    fingerprint in its card), each naming the file and field."""

    from serving.engine.draft_head import (
        CARD_FILE,
        CONFIG_FILE,
        WEIGHTS_FILE,
        DraftHeadError,
        head_tensors,
        policy_mismatch,
        read_card,
        read_config,
        read_token_map,
        tensor_problems,
    )

    head = Path(head_dir)
    try:
        config = read_config(head)
        shapes = head_tensors(head)
        card = read_card(head)
    except DraftHeadError as exc:
        return None, [f"draft_head: {exc}"]
    problems = [f"draft_head: {head / WEIGHTS_FILE}: {p}" for p in tensor_problems(config, shapes)]
    if config.hot_vocab_size:
        try:
            read_token_map(head, config)
        except DraftHeadError as exc:
            problems.append(f"draft_head: {exc}")
    algorithm = ALGORITHM_FOR_LAYOUT[config.layout]
    model = Path(model_path) if model_path else None
    from harness import adapters
    from harness.checkpoints import (
        CheckpointError,
        checkpoint_config,
        checkpoint_problem,
        fingerprint,
        is_checkpoint,
        resolve_checkpoint,
    )

    if model is not None and adapters.is_adapter(model) and checkpoint_problem(model) is None:
        # an adapter runs merged with its base on every route (built once in the model cache), and
        # the MTP stage adapts a head to that merged policy: check the head against it
        try:
            model = resolve_checkpoint(str(model))
        except CheckpointError as exc:
            return algorithm, problems + [f"model_path: {exc}"]
    if model is not None and is_checkpoint(model):  # the policy is on this host: check against it
        from types import SimpleNamespace

        try:
            policy = checkpoint_config(model)
        except CheckpointError as exc:
            return algorithm, problems + [f"model_path: {exc}"]
        problems += [
            f"draft_head: {head / CONFIG_FILE}: {p}"
            for p in policy_mismatch(config, SimpleNamespace(**policy))
        ]
        archs = [str(a) for a in policy.get("architectures") or []]
        if algorithm == "NEXTN" and not any(a.startswith(NEXTN_FAMILIES) for a in archs):
            problems.append(
                f"draft_head: {head / CONFIG_FILE}: harness_draft.layout: nextn, but SGLang serves "
                "NEXTN only for models that ship MTP layers, "
                f"not {archs or 'this model'}; adapt an "
                "eagle-layout head (python -m training mtp --layout eagle)"
            )
        try:
            policy_fingerprint = fingerprint(model)
        except CheckpointError as exc:
            return algorithm, problems + [f"model_path: {exc}"]
        made_for = card.get("policy_fingerprint")
        if not made_for:
            problems.append(
                f"draft_head: {head / CARD_FILE}: policy_fingerprint: "
                "missing; the card must say which "
                "policy the head was adapted to"
            )
        elif made_for != policy_fingerprint:
            problems.append(
                f"draft_head: {head / CARD_FILE}: policy_fingerprint: "
                f"the head was adapted to {card.get('policy')} "
                f"({made_for[:12]}), not to {model} ({policy_fingerprint[:12]}): "
                "it is stale for this policy; re-adapt "
                f"it with python -m training mtp --model {model} --init-head {head}"
            )
    return algorithm, problems


@dataclass(frozen=True)
class CheckpointFlags:
    """The flags a checkpoint on this host calls for, read from its own files, and why."""

    tool_call_parser: str | None
    reasoning_parser: str | None
    speculative_algorithm: str | None
    notes: tuple[str, ...]


def _chat_template(folder: Path) -> str:
    import json

    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8", errors="replace")
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    template = config.get("chat_template") if isinstance(config, dict) else None
    if isinstance(template, list):  # named templates: the default one
        template = next(
            (
                t.get("template")
                for t in template
                if isinstance(t, dict) and t.get("name") == "default"
            ),
            None,
        )
    return template if isinstance(template, str) else ""


def checkpoint_flags(model_path: str | Path) -> CheckpointFlags | None:
    """The speculative algorithm and parsers that fit the checkpoint: its family (config.json's
    architectures and model_type) and its chat template's tool-call and thinking formats. None when
    the folder is not on this host (a hub id, another host's path): the report's settings stand.

    - NEXTN only for families that ship MTP layers (``NEXTN_FAMILIES``); without them and without a
      draft head there is no speculative decoding (SGLang refuses NEXTN for a model with no MTP
      layers);
    - the tool-call parser of the template's format: ``<function=`` (Qwen3-Coder XML) ->
      qwen3_coder, ``<tool_call>`` JSON in a Qwen template -> qwen25, ``[TOOL_CALLS]`` -> mistral,
      ``<|python_tag|>`` -> llama3; none when the template has no tool format (the Harness then
      renders the tools into the prompt and reads ``<tool_call>`` text itself);
    - a reasoning parser only for a template that opens a ``<think>`` block (qwen3 for the Qwen3
      family, deepseek-r1 for DeepSeek)."""
    from harness.checkpoints import CheckpointError, checkpoint_config

    folder = Path(model_path)
    try:
        config = checkpoint_config(folder)
    except CheckpointError:
        return None
    archs = [a for a in config.get("architectures") or [] if isinstance(a, str)]
    family = str(config.get("model_type") or "")
    shown = ", ".join(archs) or family or "an unnamed architecture"
    template = _chat_template(folder)
    notes = []
    if any(a.startswith(NEXTN_FAMILIES) for a in archs):
        speculative = "NEXTN"
        notes.append(f"{shown} ships MTP layers: NEXTN speculative decoding on its own head")
    else:
        speculative = None
        notes.append(
            f"{shown} has no MTP layers and no draft head was given: no speculative decoding "
            "(adapt a head with `python -m training mtp` and pass --draft-head)"
        )
    if "<function=" in template:
        tool = "qwen3_coder"
    elif "<tool_call>" in template and family.startswith("qwen"):
        tool = "qwen25"
    elif "[TOOL_CALLS]" in template:
        tool = "mistral"
    elif "<|python_tag|>" in template:
        tool = "llama3"
    else:
        tool = None
    notes.append(
        f"tool calls: {tool} (the chat template's format)"
        if tool
        else "the chat template has no tool-call format: no "
        "--tool-call-parser (the Harness renders the "
        "tools into the prompt and reads <tool_call> text itself)"
    )
    if "<think>" in template and family.startswith("qwen3"):
        reasoning = "qwen3"
    elif "<think>" in template and family.startswith("deepseek"):
        reasoning = "deepseek-r1"
    else:
        reasoning = None
    notes.append(
        f"reasoning: {reasoning} (the template opens <think>)"
        if reasoning
        else "the chat template has no thinking block: no --reasoning-parser"
    )
    return CheckpointFlags(tool, reasoning, speculative, tuple(notes))


def sglang_launch_argv(launch: SGLangLaunch, *, check_paths: bool = False) -> list[str]:
    """The launch command as an argv list; raises SGLangCommandError on bad settings."""
    problems = validate_launch(launch, check_paths=check_paths)
    if problems:
        raise SGLangCommandError(problems)
    argv = [
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        launch.model_path,
        "--served-model-name",
        launch.model_name,
        "--dtype",
        DTYPE_ALIASES.get(launch.dtype, launch.dtype),
        "--host",
        launch.host,
        "--port",
        str(launch.port),
        "--tp-size",
        str(launch.tp_size),
    ]
    if launch.tool_call_parser:
        argv += ["--tool-call-parser", launch.tool_call_parser]
    if launch.reasoning_parser:
        argv += ["--reasoning-parser", launch.reasoning_parser]
    if launch.speculative_algorithm:
        argv += [
            "--speculative-algorithm",
            launch.speculative_algorithm,
            "--speculative-num-steps",
            str(launch.speculative_num_steps),
            "--speculative-eagle-topk",
            str(launch.speculative_eagle_topk),
            "--speculative-num-draft-tokens",
            str(launch.speculative_num_draft_tokens),
        ]
        if launch.draft_head:
            argv += ["--speculative-draft-model-path", launch.draft_head]
        if launch.speculative_token_map:
            argv += ["--speculative-token-map", launch.speculative_token_map]
    if launch.mem_fraction_static is not None:
        argv += ["--mem-fraction-static", str(launch.mem_fraction_static)]
    if launch.context_length is not None:
        argv += ["--context-length", str(launch.context_length)]
    if launch.trust_remote_code:
        argv.append("--trust-remote-code")
    if launch.api_key_env:
        argv += ["--api-key", f"${{{launch.api_key_env}}}"]
    argv += list(launch.extra_args)
    return argv


def sglang_launch_shell(launch: SGLangLaunch, *, check_paths: bool = False) -> str:
    """The launch command as one shell line (the API key stays an env-var reference)."""
    argv = sglang_launch_argv(launch, check_paths=check_paths)
    parts = []
    for token in argv:
        if token.startswith("${") and token.endswith("}"):
            parts.append(f'"{token}"')
        else:
            parts.append(shlex.quote(token))
    return " ".join(parts)


def flag_names(argv: list[str]) -> list[str]:
    """The `--flag` tokens of an argv list, in order."""
    return [t for t in argv if t.startswith("--")]
