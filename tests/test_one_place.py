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
