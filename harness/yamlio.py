"""YAML reading that remembers where every value came from; the one reader for YAML a user sends.

``load_yaml`` returns plain Python data plus a :class:`LineMap` from a path of
keys/indices (``("tools", 2, "timeout_s")``) to the 1-based source line, so a
schema error deep inside a file can still be reported at its line. Syntax
errors, duplicate keys and non-string keys become problems, never exceptions.

Everything a user can send (bundle files, a skill's front matter, a form's
YAML field) is read here, and so is YAML already checked (``yaml_data``: the
augmentation's and the T3 sets' edits of a loaded bundle), so the bounds hold everywhere: at most
``MAX_YAML_BYTES`` of text, ``MAX_YAML_DEPTH`` levels of nesting, and no
aliases (``*name``), which would let a few hundred bytes expand into
gigabytes wherever the value is copied or rendered. Text that breaks one is
not read at all: its one problem has the field ``REFUSED``, which the studio
uses to refuse storing it. Aliases and depth are found while the composed node
tree (which shares, never copies, an aliased node) is turned into data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from harness.errors import HarnessValidationError, Problem

Path_ = tuple

MAX_YAML_BYTES = 256 * 1024
"""One YAML document (a bundle file, a front matter, a form field); the demo's largest is 6 KiB."""
MAX_YAML_DEPTH = 64
"""Nested mappings/sequences; the deepest real ones (JSON Schemas in tools.yaml) use about 10."""
REFUSED = "(refused)"
"""The field of the problem for text the reader will not read: too large, too deep, or aliases."""


@dataclass
class LineMap:
    """Source lines of the values of one YAML document (offset for front matter)."""

    lines: dict[Path_, int] = field(default_factory=dict)
    value_lines: dict[Path_, int] = field(default_factory=dict)
    offset: int = 0

    def value_line(self, path) -> int:
        """Where the value itself starts (a block scalar starts after its key)."""
        path = tuple(path)
        if path in self.value_lines:
            return self.value_lines[path] + self.offset
        return self.line(path)

    def line(self, path) -> int:
        """The line of ``path``, or of its nearest parent that has one."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path] + self.offset
            path = path[:-1]
        return self.lines.get((), 1) + self.offset


class _Refused(ValueError):
    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line


_ALIAS = (
    "YAML anchors and aliases (&name / *name) are not read: the value anchored here is used "
    "again, and aliases can expand a few lines into gigabytes; write it out where it is needed"
)
_DEEP = f"nested deeper than {MAX_YAML_DEPTH} levels (the limit); flatten the structure"


def _construct(node, path, linemap: LineMap, problems: list[Problem], file: str, loader, seen: set):
    # The composed tree shares one node wherever an alias points at it, so meeting a
    # node twice is meeting an alias; ``path`` has one part per enclosing collection.
    if id(node) in seen:
        raise _Refused(node.start_mark.line + 1 + linemap.offset, _ALIAS)
    seen.add(id(node))
    if len(path) >= MAX_YAML_DEPTH and isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
        raise _Refused(node.start_mark.line + 1 + linemap.offset, _DEEP)
    linemap.lines.setdefault(path, node.start_mark.line + 1)
    linemap.value_lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode) and node.style in ("|", ">"):
        linemap.value_lines[path] += 1
    if isinstance(node, yaml.MappingNode):
        out = {}
        for key_node, value_node in node.value:
            if id(key_node) in seen:
                raise _Refused(key_node.start_mark.line + 1 + linemap.offset, _ALIAS)
            seen.add(id(key_node))
            if not isinstance(key_node, yaml.ScalarNode):
                problems.append(
                    Problem(
                        file,
                        key_node.start_mark.line + 1 + linemap.offset,
                        _dotted(path) or "(top level)",
                        "mapping keys must be plain strings",
                    )
                )
                continue
            if key_node.tag == "tag:yaml.org,2002:merge":
                problems.append(
                    Problem(
                        file,
                        key_node.start_mark.line + 1 + linemap.offset,
                        _dotted(path) or "(top level)",
                        "YAML merge keys (<<) are not supported",
                    )
                )
                continue
            key = str(yaml.SafeLoader.construct_scalar(loader, key_node))
            if key in out:
                problems.append(
                    Problem(
                        file,
                        key_node.start_mark.line + 1 + linemap.offset,
                        _dotted((*path, key)),
                        f"duplicate key '{key}' (already set above)",
                    )
                )
                continue
            linemap.lines[(*path, key)] = key_node.start_mark.line + 1
            out[key] = _construct(value_node, (*path, key), linemap, problems, file, loader, seen)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [
            _construct(item, (*path, i), linemap, problems, file, loader, seen)
            for i, item in enumerate(node.value)
        ]
    return loader.construct_object(node, deep=True)


class _Loader(yaml.SafeLoader):
    pass


# libyaml's parser is ~10x faster; a 200-skill Harness is parsed on every editor save.
_COMPOSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _dotted(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def dotted(path) -> str:
    """``("tools", 2, "name")`` -> ``tools[2].name``."""
    return _dotted(path)


#: Parser contexts whose start line holds the mistake (a simple key, a quoted scalar, a flow
#: collection or a token that was never finished), rather than the line where it was noticed.
_UNCLOSED = ("while scanning", "while parsing a flow")


def load_yaml(
    text: str, *, file: str, line_offset: int = 0
) -> tuple[object, LineMap, list[Problem]]:
    """Parse one YAML document; returns (data, line map, problems).

    ``data`` is None when the text could not be parsed at all, or was refused
    (one problem, field ``REFUSED``) for breaking a bound.
    """
    linemap = LineMap(offset=line_offset)
    problems: list[Problem] = []
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_YAML_BYTES:
        return (
            None,
            linemap,
            [
                Problem(
                    file,
                    1 + line_offset,
                    REFUSED,
                    f"the YAML is {size} bytes; the limit is {MAX_YAML_BYTES} "
                    f"bytes ({MAX_YAML_BYTES // 1024} KiB)",
                )
            ],
        )
    try:
        nodes = list(yaml.compose_all(text, Loader=_COMPOSER))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = (mark.line + 1 if mark else 1) + line_offset
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "maximum nesting depth" in reason:  # libyaml's own cap (1000), far above ours
            return None, linemap, [Problem(file, line, REFUSED, _DEEP)]
        context = getattr(exc, "context_mark", None)
        if getattr(exc, "context", None) and context is not None and context is not mark:
            context_line = context.line + 1 + line_offset
            if context_line < line and exc.context.startswith(_UNCLOSED):
                # a key without its ':', a quote or bracket never closed: the mistake is where the
                # construct starts, not the later line where the parser gave up on it
                reason += f" ({exc.context} at line {context_line}; noticed at line {line})"
                line = context_line
            else:
                reason += f" ({exc.context} at line {context_line})"
        return None, linemap, [Problem(file, line, "(syntax)", f"invalid YAML: {reason}")]
    except (ValueError, RecursionError) as exc:  # e.g. unreadable characters
        return None, linemap, [Problem(file, 1 + line_offset, "(syntax)", f"invalid YAML: {exc}")]
    if len(nodes) > 1:
        problems.append(
            Problem(
                file,
                nodes[1].start_mark.line + 1 + line_offset,
                "(syntax)",
                "expected one YAML document, found several (remove the '---')",
            )
        )
    if not nodes or nodes[0] is None:
        return None, linemap, problems
    try:
        # a fresh constructor each time: it caches every object it builds, and a shared
        # one would keep each document parsed by a long-running studio process alive
        data = _construct(nodes[0], (), linemap, problems, file, _Loader(""), set())
    except _Refused as exc:
        return None, linemap, [Problem(file, exc.line, REFUSED, str(exc))]
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
        return (
            None,
            linemap,
            [*problems, Problem(file, 1 + line_offset, "(syntax)", f"invalid YAML value: {exc}")],
        )
    return data, linemap, problems


def yaml_data(text: str, *, file: str, line_offset: int = 0) -> object:
    """The data of YAML that was checked when it was read first (a loaded bundle's file, its
    skills' front matter): ``load_yaml``'s, under the same bounds; a problem (which a loaded bundle
    cannot have) is a ``HarnessValidationError`` naming file and line, never a half-read value."""
    data, _lines, problems = load_yaml(text, file=file, line_offset=line_offset)
    if problems:
        raise HarnessValidationError(problems)
    return data


def dump_yaml(data) -> str:
    """Canonical YAML text: block style, keys in the given order, unicode kept."""
    return yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100
    )
