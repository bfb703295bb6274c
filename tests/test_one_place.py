"""One concept, one place (issue 52, item 3): each check below finds a second implementation of a
concept by the shape of its code (the syntax tree), not by one spelling, and each shows that it
finds a rewritten copy. The guards of the concepts made one earlier are in tests/test_layers.py.

Every source file is parsed once per test session (``_trees``)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARIES = ("harness", "evaluation", "training", "serving")
#: The code that ships: the four libraries, the studio, and the scripts and benchmarks beside them.
SHIPPED = (*LIBRARIES, "studio", "scripts", "benchmarks")


@functools.cache
def _tree(name: str) -> ast.Module:
    """The syntax tree of one file of the checkout (``name`` relative to its root), parsed once."""
    return ast.parse((ROOT / name).read_text(encoding="utf-8"), filename=name)


@functools.cache
def _trees(*packages: str) -> dict[str, ast.Module]:
    """file (relative, POSIX) -> syntax tree, for every ``.py`` file under ``packages``."""
    return {
        name: _tree(name)
        for package in packages
        if (ROOT / package).is_dir()
        for name in sorted(
            path.relative_to(ROOT).as_posix() for path in (ROOT / package).rglob("*.py")
        )
    }


def _name(node: ast.AST) -> str:
    """``f`` of ``f``, ``a.b.f`` and ``f(...)``'s callee; '' for anything else."""
    if isinstance(node, ast.Call):
        node = node.func
    return (
        node.id
        if isinstance(node, ast.Name)
        else node.attr
        if isinstance(node, ast.Attribute)
        else ""
    )


# --- one policy factory -------------------------------------------------------------------------


def _defines(tree: ast.AST, name: str) -> list[int]:
    """Lines where ``name`` is defined: a function or class of that name, or an assignment to it
    (``make_policy = functools.partial(...)``, ``make_policy = lambda ...``); importing it is using
    it."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                found.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_name(t) == name for t in targets if isinstance(t, (ast.Name, ast.Attribute))):
                found.append(node.lineno)
    return found


def test_one_module_defines_make_policy():
    """``harness.policies.factory.make_policy`` builds every policy from a spec; the replay's agent
    once had its own ``make_policy`` (serving/agent_runner.py) with its own timeout and a dead
    branch. A second definition, under that name, is a second factory."""
    where = [
        f"{name}:{line}"
        for name, tree in _trees(*SHIPPED).items()
        for line in _defines(tree, "make_policy")
    ]
    assert [w.split(":")[0] for w in where] == ["harness/policies/factory.py"], where


@pytest.mark.parametrize(
    "source",
    [
        "def make_policy(*, endpoint, settings):\n    return None\n",
        "async def make_policy(spec):\n    return None\n",
        "make_policy = functools.partial(build, role='replay')\n",
        "class Runner:\n    make_policy = staticmethod(lambda spec: None)\n",
    ],
)
def test_a_second_make_policy_is_found(source):
    assert _defines(ast.parse(source), "make_policy")


def test_using_make_policy_is_no_definition():
    source = (
        "from harness.policies import make_policy\n"
        "policy = make_policy('tiny')\n"
        "factory = lambda: make_policy(spec)\n"
    )
    assert not _defines(ast.parse(source), "make_policy")


# --- one IFEval answer-resume-score loop ----------------------------------------------------------

#: The one loop that answers IFEval prompts, skips those a responses file already answers, appends
#: each new answer and scores them: the CLI and training's self-evaluation both call it.
IFEVAL_LOOP = ("evaluation/ifeval.py", "run_ifeval")
#: What scores an IFEval answer: the evaluation's functions and lm-eval's checkers they wrap.
IFEVAL_SCORERS = {
    "score_responses",
    "check_response",
    "process_results",
    "_process_results",
    "test_instruction_following_strict",
    "test_instruction_following_loose",
}
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def _skips_what_is_done(loop: ast.AST) -> bool:
    """Whether a loop asks, per item, whether it was done already: a membership test (``key not in
    done``), a lookup that may find nothing (``done.get(key)``) or a lookup whose ``KeyError`` is
    caught."""
    for node in ast.walk(loop):
        if isinstance(node, ast.Compare) and any(
            isinstance(op, (ast.In, ast.NotIn)) for op in node.ops
        ):
            return True
        if isinstance(node, ast.Call) and _name(node) == "get":
            return True
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            caught = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            if any(_name(c) in ("KeyError", "LookupError") for c in caught):
                return True
    return False


def _is_answer_resume_score(scope: ast.AST, body: list[ast.stmt]) -> bool:
    nodes = [node for statement in body for node in ast.walk(statement)]
    scores = any(isinstance(n, ast.Call) and _name(n) in IFEVAL_SCORERS for n in nodes)
    return scores and any(isinstance(n, _LOOPS) and _skips_what_is_done(n) for n in nodes)


def _answer_resume_score_loops(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, function) of each function (the outermost one; ``""`` for module-level code) that
    loops over items skipping those already done and scores with IFEval's checkers: the shape of
    the answer-resume-score loop however it is written. A copy split over two functions (one
    resumes, another scores) is not found."""
    found = []
    top = [s for s in tree.body if not isinstance(s, (*_FUNCTIONS, ast.ClassDef))]
    if _is_answer_resume_score(tree, top):
        found.append((top[0].lineno, ""))

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _FUNCTIONS) and _is_answer_resume_score(child, child.body):
                found.append((child.lineno, child.name))
            else:
                visit(child)

    visit(tree)
    return found


def test_the_ifeval_answer_resume_score_loop_is_written_once():
    """``evaluation.ifeval.run_ifeval`` is the loop; training's self-evaluation once had its own
    copy (``training/self_eval.py`` ``_answer_and_score``), with its own row format. Training may
    import the evaluation, never the reverse (docs/architecture.md §1), so the one copy is the
    evaluation's and training calls it."""
    written = [
        f"{name}:{line} ({function})"
        for name, tree in _trees(*SHIPPED).items()
        for line, function in _answer_resume_score_loops(tree)
        if (name, function) != IFEVAL_LOOP
    ]
    assert not written, "\n".join(written)
    assert [f for _, f in _answer_resume_score_loops(_tree(IFEVAL_LOOP[0]))] == [IFEVAL_LOOP[1]]


@pytest.mark.parametrize(
    "source",
    [
        # the copy training/self_eval.py had
        "def score(policy, path, prompts):\n"
        "    done = read_rows(path)\n"
        "    for prompt in prompts:\n"
        "        key = str(prompt['key'])\n"
        "        if key in done:\n"
        "            continue\n"
        "        row = {'id': key, 'response': answer(prompt['prompt'])}\n"
        "        _append(path, row)\n"
        "        done[key] = row\n"
        "    texts = [done[str(p['key'])]['response'] for p in prompts]\n"
        "    return score_responses(prompts=prompts, responses=texts)\n",
        # a while loop and a lookup tested for nothing
        "def score(prompts, saved):\n"
        "    i, out = 0, []\n"
        "    while i < len(prompts):\n"
        "        text = saved.get(prompts[i]['key'])\n"
        "        if text is None:\n"
        "            text = generate(prompts[i]['prompt'])\n"
        "        out.append(text)\n"
        "        i += 1\n"
        "    return ifeval.score_responses(prompts=prompts, responses=out)\n",
        # the prompts still to answer picked by a comprehension, each scored by the checkers
        "async def score(prompts, saved):\n"
        "    todo = [p for p in prompts if p['key'] not in saved]\n"
        "    for p in todo:\n"
        "        saved[p['key']] = await generate(p['prompt'])\n"
        "    return [check_response(prompt=p, response=saved[p['key']]) for p in prompts]\n",
        # a KeyError caught for the prompts not answered yet, lm-eval's own function called
        "class Scorer:\n"
        "    def run(self, prompts):\n"
        "        for p in prompts:\n"
        "            try:\n"
        "                self.answers[p['key']]\n"
        "            except KeyError:\n"
        "                self.answers[p['key']] = self.generate(p['prompt'])\n"
        "        return [process_results(p, [self.answers[p['key']]]) for p in prompts]\n",
    ],
)
def test_a_rewritten_ifeval_loop_is_found(source):
    assert len(_answer_resume_score_loops(ast.parse(source))) == 1


def test_scoring_without_resuming_is_no_second_loop():
    source = (
        "def score(prompts, generate):\n"
        "    texts = [generate(p['prompt']) for p in prompts]\n"
        "    return score_responses(prompts=prompts, responses=texts)\n"
        "def resume(path, prompts):\n"
        "    done = read_rows(path)\n"
        "    return [p for p in prompts if p['key'] not in done]\n"
    )
    assert not _answer_resume_score_loops(ast.parse(source))


# --- one YAML reader ----------------------------------------------------------------------------

#: The YAML library's functions that turn text into data (or into the nodes and events data is built
#: from); ruamel's reader is its ``YAML()`` object.
YAML_READERS = {
    "load",
    "load_all",
    "safe_load",
    "safe_load_all",
    "full_load",
    "full_load_all",
    "unsafe_load",
    "unsafe_load_all",
    "compose",
    "compose_all",
    "parse",
    "scan",
    "YAML",
}


def _yaml_modules(tree: ast.AST) -> set[str]:
    """The names a module binds to a YAML library: ``import yaml``, ``import yaml as y``, ``from
    ruamel import yaml``, ``import ruamel.yaml`` (then ``ruamel.yaml.X``: the name ``yaml``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in ("yaml", "ruamel.yaml"):
                    names.add(alias.asname or alias.name.split(".")[-1])
        elif isinstance(node, ast.ImportFrom) and node.module == "ruamel":
            names |= {a.asname or a.name for a in node.names if a.name == "yaml"}
    return names


def _yaml_reads(tree: ast.AST) -> list[int]:
    """Lines where a module reads YAML by itself: a reader of the YAML library called or imported
    by name (``yaml.safe_load(text)``, ``from yaml import load``), or a loader class named
    (``yaml.load(text, Loader=yaml.CSafeLoader)``, ``getattr(yaml, "CSafeLoader", ...)``), which
    is how a reader is made of the library's parts."""
    modules = _yaml_modules(tree)

    def reads(node: ast.AST) -> bool:
        if isinstance(node, ast.ImportFrom) and node.module in ("yaml", "ruamel.yaml"):
            return any(a.name in YAML_READERS or a.name.endswith("Loader") for a in node.names)
        if isinstance(node, ast.Attribute) and _name(node.value) in modules:
            return node.attr in YAML_READERS or node.attr.endswith("Loader")
        return (
            isinstance(node, ast.Call)
            and _name(node) == "getattr"
            and len(node.args) >= 2
            and _name(node.args[0]) in modules
            and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).endswith(("Loader", "load", "load_all"))
        )

    found = [node.lineno for node in ast.walk(tree) if reads(node)]
    return sorted(set(found))


def test_yaml_is_read_only_by_harness_yamlio():
    """``harness/yamlio.py`` is the one YAML reader (docs/architecture.md §3): it bounds what it
    reads (size, nesting, no aliases, which could expand a few lines into gigabytes), refuses
    duplicate keys instead of keeping the last, and says the line of every problem. A module that
    reads YAML with the library itself skips all of that, even for text that was checked once (a
    loaded bundle's files: ``yamlio.yaml_data``), because the next caller of its helper may hand it
    text that was not. The augmentation's editable copy and the T3 sets' per-case Harness did.

    The rule is on reading only: writing YAML is no second reader (the augmentation keeps its
    block-style emitter, ``harness.augment.editable.dump_text``). It covers the code that ships (the
    libraries, the studio, scripts, benchmarks), not tests/, which read what the code writes with
    the library on purpose, as a check that shares no code with what it checks."""
    wrong = [
        f"{name}:{line}"
        for name, tree in _trees(*SHIPPED).items()
        if name != "harness/yamlio.py"
        for line in _yaml_reads(tree)
    ]
    assert not wrong, "read YAML through harness.yamlio (load_yaml, yaml_data):\n" + "\n".join(
        wrong
    )
    assert _yaml_reads(_tree("harness/yamlio.py")), "harness/yamlio.py reads no YAML: update this"


@pytest.mark.parametrize(
    "source",
    [
        "import yaml\ndata = yaml.safe_load(text)\n",
        "import yaml as y\nfor doc in y.safe_load_all(text):\n    pass\n",
        "import yaml\nLOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)\n",
        "import yaml\ndata = yaml.load(text, Loader=yaml.CSafeLoader)\n",
        "from yaml import safe_load as read\ndata = read(text)\n",
        "from ruamel.yaml import YAML\ndata = YAML(typ='safe').load(text)\n",
        "from ruamel import yaml\ndata = yaml.YAML().load(text)\n",
        "def f(text):\n    import yaml\n    return yaml.compose(text)\n",
    ],
)
def test_a_yaml_read_written_another_way_is_found(source):
    assert _yaml_reads(ast.parse(source))


def test_writing_yaml_or_reading_json_is_no_yaml_read():
    source = (
        "import json\nimport yaml\n"
        "text = yaml.safe_dump(data, sort_keys=False)\n"
        "class Dumper(yaml.SafeDumper):\n    pass\n"
        "rows = json.load(handle)\n"
    )
    assert not _yaml_reads(ast.parse(source))


# --- one config writer --------------------------------------------------------------------------

#: The one writer of a config dataclass as a file's text.
CONFIG_WRITER = ("harness/config_schema.py", "config_text")
#: Calls that turn data into JSON or YAML text.
SERIALIZERS = {"dumps", "dump", "dump_yaml", "safe_dump", "dump_all", "safe_dump_all", "dump_text"}


def _names_a_config(node: ast.AST) -> bool:
    return any(
        "config" in word.lower() or word.lower() in ("cfg", "conf")
        for sub in ast.walk(node)
        for word in [_name(sub)]
        if isinstance(sub, (ast.Name, ast.Attribute))
    )


def _config_as_data(node: ast.AST) -> bool:
    """``asdict(config)``, ``dataclasses.asdict(self.config)``, ``vars(cfg)``, ``config.to_dict()``,
    ``config.__dict__``: a config's fields as a mapping."""
    if isinstance(node, ast.Call) and _name(node) in ("asdict", "vars") and node.args:
        return _names_a_config(node.args[0])
    if isinstance(node, ast.Call) and _name(node) == "to_dict" and not node.args:
        return _names_a_config(node.func)
    return isinstance(node, ast.Attribute) and node.attr == "__dict__" and _names_a_config(node)


def _config_writes(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, function) of each serialization of a whole config: a JSON or YAML writer handed a
    config's fields as a mapping, directly or through a name assigned from one in the same function.
    A record that holds a config among other values (``{"config": asdict(config), "items": ...}``)
    is a record, not a config file."""
    found = []

    def scan(body: list[ast.stmt], function: str) -> None:
        nodes = [n for statement in body for n in _walk_scope(statement)]
        held = {
            target.id
            for n in nodes
            if isinstance(n, ast.Assign) and _config_as_data(n.value)
            for target in n.targets
            if isinstance(target, ast.Name)
        }
        for n in nodes:
            if isinstance(n, ast.Call) and _name(n) in SERIALIZERS and n.args:
                first = n.args[0]
                if _config_as_data(first) or (isinstance(first, ast.Name) and first.id in held):
                    found.append((n.lineno, function))
            if isinstance(n, _FUNCTIONS):
                scan(n.body, n.name)

    scan(tree.body, "")
    return found


def _walk_scope(node: ast.AST):
    """The nodes of ``node`` outside any function defined in it (those functions themselves
    included, not their bodies)."""
    yield node
    if isinstance(node, _FUNCTIONS):
        return
    for child in ast.iter_child_nodes(node):
        yield from _walk_scope(child)


def test_a_config_is_written_by_the_one_config_writer():
    """``harness.config_schema.config_text`` (and ``dump_config``, which writes its text to a file)
    writes a config: YAML for a run to read (the studio's run files and the previews beside its
    forms), JSON for what a run resolved (the stages', the pipeline's, the ablation's). The studio
    once wrote its YAML itself (``studio/training/configs.py`` ``config_yaml``) and the ablation its
    JSON, each with its own settings."""
    written = [
        f"{name}:{line} ({function})"
        for name, tree in _trees(*SHIPPED).items()
        for line, function in _config_writes(tree)
        if (name, function) != CONFIG_WRITER
    ]
    assert not written, "\n".join(written)
    assert [f for _, f in _config_writes(_tree(CONFIG_WRITER[0]))] == [CONFIG_WRITER[1]] * 2


@pytest.mark.parametrize(
    "source",
    [
        "def f(config):\n    return dump_yaml(dataclasses.asdict(config))\n",
        "def f(self):\n    path.write_text(json.dumps(asdict(self.config), indent=2))\n",
        "def f(cfg):\n    data = vars(cfg)\n    yaml.safe_dump(data, handle)\n",
        "def f(step_config):\n    json.dump(step_config.to_dict(), handle)\n",
        "class Run:\n    def save(self):\n        text = json.dumps(self.config.__dict__)\n",
    ],
)
def test_a_config_written_another_way_is_found(source):
    assert len(_config_writes(ast.parse(source))) == 1


def test_a_record_holding_a_config_is_no_config_file():
    source = (
        "def f(config, items):\n"
        "    return json.dumps({'config': asdict(config), 'items': items})\n"
        "def g(result):\n"
        "    return json.dumps(asdict(result))\n"
    )
    assert not _config_writes(ast.parse(source))
