"""The layers of docs/architecture.md §1, checked on every import statement (lazy ones included):
the Harness library imports none of the others and holds no inference engine; the local routes reach
it as plug-ins."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.policies import factory

ROOT = Path(__file__).resolve().parents[1]
LIBRARIES = ("harness", "evaluation", "training", "serving")
#: What each library may import of the project (the studio may import all four; nothing imports it).
ALLOWED = {
    "harness": set(),
    "evaluation": {"harness"},
    "serving": {"harness", "evaluation"},
    "training": {"harness", "evaluation", "serving"},
}
#: No library imports the web layer; only serving runs an inference engine.
NEVER = {"studio", "django", "celery"}
ENGINES = {"xllamacpp", "sglang", "vllm"}


def _imports(package: str) -> list[tuple[str, int, str]]:
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            found += [
                (f"{path.relative_to(ROOT)}:{node.lineno}", node.lineno, name.split(".")[0])
                for name in names
            ]
    return found


@pytest.mark.parametrize("package", LIBRARIES)
def test_each_library_imports_only_the_layers_below_it(package):
    others = set(LIBRARIES) - {package}
    wrong = [
        f"{where} imports {top}"
        for where, _, top in _imports(package)
        if (top in others and top not in ALLOWED[package])
        or top in NEVER
        or (top in ENGINES and package != "serving")
    ]
    assert not wrong, "\n".join(wrong)


def test_the_harness_library_holds_no_inference_engine():
    assert not (ROOT / "harness" / "engine").exists()
    routes = {name: factory._routes()[name].value for name in factory.local_engines()}
    assert routes == {
        "llama": "serving.llama_cpp:LlamaCppPolicy",
        "torch": "serving.engine.policy:TransformersPolicy",
    }


def test_a_route_that_is_not_installed_is_named_with_the_installed_ones(monkeypatch):
    only_llama = {"llama": factory._routes()["llama"]}
    monkeypatch.setattr(factory, "_routes", lambda: only_llama)
    with pytest.raises(
        ValueError,
        match=r"local route 'torch' is not installed \(installed: llama\).*pip install -e",
    ):
        factory.local_route("torch")
    monkeypatch.setenv("HARNESS_LOCAL_ENGINE", "torch")
    with pytest.raises(ValueError, match=r"\$HARNESS_LOCAL_ENGINE: 'torch' is not one of llama"):
        factory.make_policy("local")
    with pytest.raises(ValueError, match="unknown policy 'torch:tiny'"):
        factory.make_policy("torch:tiny")


def test_the_studio_starts_without_torch():
    """A Celery worker, manage.py and every web process load the studio's URLs and task modules; the
    run folders, configs and metrics they read need no model, so they load no torch or transformers
    (about 3 s of every such process on 2 cores). The code that trains or serves imports them where
    it runs."""
    script = (
        "import sys, django; django.setup(); import studio.urls, "
        "studio.jobs.tasks, studio.evolution.tasks; "
        "print(sorted(m for m in ('torch', 'transformers', "
        "'trl', 'xllamacpp') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "studio.settings"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout


def _sources(*packages: str) -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
        for package in packages
        for path in sorted((ROOT / package).rglob("*.py"))
    }


PROJECT = (*LIBRARIES, "studio", "tests", "benchmarks", "scripts")


def test_nothing_imports_pyarrow():
    """metrics.jsonl has one reader (training.runs.parse_metrics); pyarrow is no second one."""
    wrong = [
        where
        for package in PROJECT
        if (ROOT / package).is_dir()
        for where, _, top in _imports(package)
        if top == "pyarrow"
    ]
    assert not wrong, wrong


def test_metrics_jsonl_has_one_writer():
    """Every trainer appends its rows through training.runs.append_metrics."""
    writers = [
        name
        for name, text in _sources(*LIBRARIES, "studio").items()
        if "metrics.jsonl" in text and ('open("a"' in text or "open('a'" in text)
    ]
    assert writers == ["training/runs.py"]


def test_checkpoint_folders_are_checked_only_by_harness_checkpoints():
    """A folder with config.json and no weights is no checkpoint: every check of a model folder goes
    through harness.checkpoints (is_checkpoint, checkpoint_problem, checkpoint_config), none tests
    for config.json itself."""
    import re

    bare = re.compile(r"""["']config\.json["']\)\.(is_file|exists|read_text|open|read_bytes)\(""")
    wrong = [
        f"{name}:{n}"
        for name, text in _sources(*LIBRARIES, "studio").items()
        if name not in ("harness/checkpoints.py", "harness/model_folders.py")
        for n, line in enumerate(text.splitlines(), 1)
        if bare.search(line)
    ]
    assert not wrong, wrong


def _module_graph(*packages: str) -> dict[str, set[str]]:
    """module -> the project modules it imports (function-level imports included), each edge to the
    module named (``from a import b``: ``a.b`` when that is a module), not to the packages above
    it."""
    paths = {}
    for package in packages:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        edges = graph.setdefault(module, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                edges |= {alias.name for alias in node.names if alias.name in paths}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in paths:
                named = {f"{node.module}.{alias.name}" for alias in node.names} & set(paths)
                edges |= named or {node.module}
                if len(named) < len(node.names):
                    edges.add(node.module)
        edges.discard(module)
    return graph


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        module = todo.pop()
        if module == goal:
            return True
        if module not in seen:
            seen.add(module)
            todo.extend(graph.get(module, ()))
    return False


@pytest.mark.parametrize(
    ("low", "high"),
    [
        (
            "harness.model_cache",
            "harness.checkpoints",
        ),  # the model cache is not a policy and needs no checkpoints
        ("harness.model_folders", "harness.adapters"),  # an adapter's base is a plain model folder
        (
            "harness.adapters",
            "harness.checkpoints",
        ),  # checkpoints dispatch between adapters and plain folders
        ("serving.engine.sampling", "serving.engine.speculative"),
        ("serving.engine.speculative", "serving.engine.engine"),
    ],
)
def test_no_import_circle_between_a_module_and_the_one_built_on_it(low, high):
    graph = _module_graph("harness", "serving")
    assert _reaches(graph, high, low), f"{high} no longer builds on {low}: update this test"
    assert not _reaches(graph, low, high), f"{low} reaches {high}: an import circle"


def test_cross_process_locks_are_filelock():
    """The model cache, run folders' JSON and the test artefacts lock with filelock, not flock
    helpers."""
    wrong = [
        where
        for package in PROJECT
        if (ROOT / package).is_dir()
        for where, _, top in _imports(package)
        if top == "fcntl"
    ]
    assert not wrong, wrong


def test_views_answer_404_through_one_helper():
    """studio.lookups.found_or_404 is the one way a view turns a missing object into a 404."""
    wrong = [name for name, text in _sources("studio").items() if "get_object_or_404(" in text]
    assert not wrong, wrong


def test_the_code_cites_the_projects_own_documents():
    """Comments and docstrings cite docs/ (docs/architecture.md §N), not the external specification
    or design document a clone lacks; every section cited is there."""
    import re

    sources = _sources(*PROJECT)
    stale = re.compile(
        "SPEC" + r" §|DESIGN" + r"\.md|\bthe " + "SPEC" + r"\b"
    )  # split: this file names them
    wrong = [name for name, text in sources.items() if stale.search(text)]
    assert not wrong, wrong
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    cited = {
        int(n)
        for text in sources.values()
        for n in re.findall(r"docs/architecture\.md §(\d+)", text)
    }
    missing = [n for n in sorted(cited) if f"## §{n} " not in architecture]
    assert cited and not missing, missing


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of more than one module
    (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph.get(module, ())):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def _app(module: str) -> str:
    return module.split(".")[1] if module.count(".") else module


def test_no_studio_import_circle_crosses_apps_or_spans_more_than_two_modules():
    """docs/architecture.md §1: a studio app reaches another through its selectors and services, and
    another app's reaction to its events through signals, so no import (function-level ones
    included) forms a circle across two apps; within one app a circle is at most a module and its
    task module (a task module imports the service that runs it, which queues the task)."""
    graph = {
        module: edges
        for module, edges in _module_graph("studio").items()
        if ".migrations." not in module
    }
    circles = _circles(graph)
    across = [c for c in circles if len({_app(m) for m in c}) > 1]
    long = [c for c in circles if len(c) > 2]
    assert not across, f"import circles across studio apps: {across}"
    assert not long, f"import circles of more than two modules within an app: {long}"


def _hand_read_posts(tree: ast.AST) -> list[int]:
    """Lines of ``<...>.POST[...]``, ``<...>.POST.get(...)`` and ``<...>.POST.getlist(...)``."""

    def is_post(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "POST"

    return [
        node.lineno
        for node in ast.walk(tree)
        if (isinstance(node, ast.Subscript) and is_post(node.value))
        or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "getlist")
            and is_post(node.func.value)
        )
    ]


def test_studio_views_parse_posted_fields_through_forms():
    """A view reads ``form.cleaned_data``, not ``request.POST[...]`` / ``request.POST.get(...)``: a
    field read by hand skips the form's checks, and its error is not named like the others. Passing
    ``request.POST`` itself to a form is what should be done; each app's forms.py holds its forms
    (docs/architecture.md)."""
    reads = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "studio").rglob("*.py"))
        for line in _hand_read_posts(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not reads, "\n".join(reads)


def test_a_hand_read_post_is_counted():
    source = (
        "request.POST['a']\nrequest.POST.get('b', "
        "'')\nself.request.POST.getlist('c')\nForm(request.POST)\n"
    )
    assert _hand_read_posts(ast.parse(source)) == [1, 2, 3]


# --- one fallback rule (issue 52, item 2) -------------------------------------------------------

#: The one place the "more than half fell back" comparison is written.
FALLBACK_RULE = ("evaluation/summary.py", "mostly_fell_back")


def _names_fallback(node: ast.AST) -> bool:
    """Whether an expression reads something named for fallbacks (``fallbacks``, ``o["fallback"]``,
    ``m.get("fallback_rate")``, ``n_fallback``, ``fell``...)."""
    for sub in ast.walk(node):
        word = (
            sub.id
            if isinstance(sub, ast.Name)
            else sub.attr
            if isinstance(sub, ast.Attribute)
            else sub.value
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str)
            else ""
        )
        if "fallback" in word.lower() or "fell" in word.lower():
            return True
    return False


def _halves(node: ast.AST) -> bool:
    """Whether an expression holds one half: ``2 * x``, ``x * 2``, ``x / 2``, ``x // 2``, ``0.5``,
    ``x >> 1``."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and sub.value == 0.5:
            return True
        if isinstance(sub, ast.BinOp):
            two = [s for s in (sub.left, sub.right) if isinstance(s, ast.Constant) and s.value == 2]
            if two and isinstance(sub.op, ast.Mult):
                return True
            if isinstance(sub.right, ast.Constant) and (
                (sub.right.value == 2 and isinstance(sub.op, (ast.Div, ast.FloorDiv)))
                or (sub.right.value == 1 and isinstance(sub.op, ast.RShift))
            ):
                return True
    return False


def _fallback_half_comparisons(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, enclosing function) of each comparison of a fallback count or rate against a half."""
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = (
                child.name
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
                else function
            )
            if (
                isinstance(child, ast.Compare)
                and any(isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)) for op in child.ops)
                and _names_fallback(child)
                and _halves(child)
            ):
                found.append((child.lineno, name))
            visit(child, name)

    visit(tree, "")
    return found


def test_the_mostly_fallback_rule_is_written_once():
    """The more-than-half fallback comparison lives in ``evaluation.summary.mostly_fell_back``;
    every other module (the replay metrics, the studio's flags, the edit benchmark, ...) calls it,
    so the rule cannot drift apart again (it was written four times, issue 52)."""
    written = [
        f"{path.relative_to(ROOT)}:{line} ({function})"
        for package in (*LIBRARIES, "studio", "scripts", "benchmarks")
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, function in _fallback_half_comparisons(
            ast.parse(path.read_text(encoding="utf-8"))
        )
        if (str(path.relative_to(ROOT)), function) != FALLBACK_RULE
    ]
    assert not written, "\n".join(written)
    rule = ast.parse((ROOT / FALLBACK_RULE[0]).read_text(encoding="utf-8"))
    assert [f for _, f in _fallback_half_comparisons(rule)] == [FALLBACK_RULE[1]]


@pytest.mark.parametrize(
    "source",
    [
        "2 * fallbacks > n > 0",
        "o['fallback'] * 2 > o['n']",
        "m.get('fallback_rate', 0) > 0.5",
        "fell > n / 2",
        "n_fallback >= n // 2 + 1",
        "summary['outcomes']['fallback'] > summary['outcomes']['n'] >> 1",
    ],
)
def test_a_rewritten_fallback_rule_is_found(source):
    assert _fallback_half_comparisons(ast.parse(f"def f():\n    return {source}\n")) == [(2, "f")]


def test_a_fallback_comparison_without_a_half_is_not_the_rule():
    assert not _fallback_half_comparisons(ast.parse("fallbacks > 0\nn * 2 > total\n"))


def test_templates_render_the_fallback_headline_through_the_one_tag():
    """No template types "Mostly fallback" itself: each renders ``{% fallback_badge %}``
    (studio/jobs/templatetags/fallback.py), so the words are the library's everywhere."""
    typed = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "templates").rglob("*.html"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "mostly fallback" in line.lower()
    ]
    assert not typed, "\n".join(typed)
