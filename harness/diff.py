"""Differences between two Harness bundles: per-file unified diffs and a summary.

The unified diffs are what a reviewer reads line by line; the summary says in
words what changed (skills added, rules changed by id, tools re-described,
constraints moved from one value to another, hooks tightened), which is what
the change log and the evolution record show.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from harness.bundle import Bundle


@dataclass
class BundleDiff:
    files: dict[str, str] = field(default_factory=dict)  # path -> unified diff text
    added_files: list[str] = field(default_factory=list)
    removed_files: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.files)

    def text(self) -> str:
        return "".join(self.files[p] for p in sorted(self.files))


def unified_file_diff(path: str, old: str | None, new: str | None, *, context: int = 3) -> str:
    a = (old or "").splitlines(keepends=True)
    b = (new or "").splitlines(keepends=True)
    lines = difflib.unified_diff(
        a,
        b,
        fromfile="/dev/null" if old is None else f"a/{path}",
        tofile="/dev/null" if new is None else f"b/{path}",
        n=context,
    )
    out = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return out


def diff_files(old: dict[str, str], new: dict[str, str], *, context: int = 3) -> BundleDiff:
    result = BundleDiff()
    for path in sorted(set(old) | set(new)):
        a, b = old.get(path), new.get(path)
        if a == b:
            continue
        result.files[path] = unified_file_diff(path, a, b, context=context)
        if a is None:
            result.added_files.append(path)
        elif b is None:
            result.removed_files.append(path)
    return result


def diff_bundles(old: Bundle, new: Bundle, *, context: int = 3) -> BundleDiff:
    result = diff_files(old.files, new.files, context=context)
    result.summary = summarise(old, new)
    return result


def summarise(old: Bundle, new: Bundle) -> list[str]:
    out: list[str] = []
    a, b = old.skills, new.skills
    for name in sorted(set(b) - set(a)):
        files = f", {len(b[name].files)} files" if b[name].files else ""
        out.append(f"skill added: {name} ({b[name].kind}, {len(b[name].rules)} rules{files})")
    for name in sorted(set(a) - set(b)):
        out.append(f"skill removed: {name}")
    for name in sorted(set(a) & set(b)):
        sa, sb = a[name], b[name]
        if sa.kind != sb.kind:
            out.append(f"skill {name}: kind {sa.kind} -> {sb.kind}")
        if sa.description != sb.description:
            out.append(f"skill {name}: description changed")
        if sa.allowed_tools != sb.allowed_tools:
            out.append(
                f"skill {name}: allowed-tools {' '.join(sa.allowed_tools) or '-'} -> "
                f"{' '.join(sb.allowed_tools) or '-'}"
            )
        ra = {r.id: r for r in sa.rules}
        rb = {r.id: r for r in sb.rules}
        for rid in rb.keys() - ra.keys():
            out.append(f"skill {name}: rule added {{#{rid}}}: {_short(rb[rid].text)}")
        for rid in ra.keys() - rb.keys():
            out.append(f"skill {name}: rule removed {{#{rid}}}: {_short(ra[rid].text)}")
        for rid in ra.keys() & rb.keys():
            if ra[rid].text != rb[rid].text:
                out.append(f"skill {name}: rule changed {{#{rid}}}: {_short(rb[rid].text)}")
        common = [r for r in ra if r in rb]
        if common != [r for r in rb if r in ra]:
            out.append(f"skill {name}: rules reordered")
        for path in sorted(set(sa.files) | set(sb.files)):
            change = (
                "added"
                if path not in sa.files
                else "removed"
                if path not in sb.files
                else "changed"
                if sa.files[path] != sb.files[path]
                else None
            )
            if change:
                out.append(f"skill {name}: file {change} {path}")
    ta = {t.name: t for t in old.tools}
    tb = {t.name: t for t in new.tools}
    for name in sorted(set(tb) - set(ta)):
        out.append(f"tool added: {name} ({tb[name].binding})")
    for name in sorted(set(ta) - set(tb)):
        out.append(f"tool removed: {name}")
    for name in sorted(set(ta) & set(tb)):
        x, y = ta[name], tb[name]
        for attr in ("description", "parameters", "timeout_s", "binding"):
            if getattr(x, attr) != getattr(y, attr):
                out.append(f"tool {name}: {attr} changed")
    ca, cb = old.prompt.constraints, new.prompt.constraints
    for key in sorted(set(ca) | set(cb)):
        if ca.get(key) != cb.get(key):
            out.append(f"constraint {key}: {ca.get(key, '-')} -> {cb.get(key, '-')}")
    ba = {blk.id: blk for blk in old.prompt.blocks}
    bb = {blk.id: blk for blk in new.prompt.blocks}
    for bid in [x for x in bb if x not in ba]:
        out.append(f"prompt block added: {bid}")
    for bid in [x for x in ba if x not in bb]:
        out.append(f"prompt block removed: {bid}")
    for bid in [x for x in ba if x in bb]:
        if ba[bid].template != bb[bid].template:
            out.append(f"prompt block {bid}: template changed")
    if [x for x in ba if x in bb] != [x for x in bb if x in ba]:
        out.append("prompt blocks reordered")
    if list(ba) != list(bb) or any(
        ba[k].template != bb[k].template or ba[k].when != bb[k].when for k in ba if k in bb
    ):
        out += _sharing_change(old, new)
    ha = {h.id: h for h in old.hooks}
    hb = {h.id: h for h in new.hooks}
    for hid in [x for x in hb if x not in ha]:
        out.append(f"hook added: {hid} ({hb[hid].event}/{hb[hid].type})")
    for hid in [x for x in ha if x not in hb]:
        out.append(f"hook removed: {hid}")
    for hid in [x for x in ha if x in hb]:
        if ha[hid] != hb[hid]:
            changed = [
                f
                for f in (
                    "event",
                    "type",
                    "matcher",
                    "params",
                    "action",
                    "message",
                    "fallback_reply",
                    "enabled",
                )
                if getattr(ha[hid], f) != getattr(hb[hid], f)
            ]
            out.append(f"hook {hid}: {', '.join(changed)} changed")
    if old.hook_set.retry != new.hook_set.retry:
        out.append("retry policy changed")
    return out


def _sharing_change(old: Bundle, new: Bundle) -> list[str]:
    """What a prompt change does to the prefix every request shares (harness.prompt_sharing): a line
    when the shared prefix changes, and what it costs each request when static text now follows
    request text. A warning, never an error: the block order is the operator's."""
    from harness.prompt_sharing import PREFILL_TOK_S, prompt_sharing

    before, after = prompt_sharing(old), prompt_sharing(new)
    if (before.shared_tokens, before.static_after_tokens) == (
        after.shared_tokens,
        after.static_after_tokens,
    ):
        return []
    approx = "" if after.exact else "~"
    lines = [
        f"prompt prefix shared by every request: {approx}{before.shared_tokens:,} -> "
        f"{approx}{after.shared_tokens:,} of {approx}{after.total_tokens:,} tokens"
    ]
    more = after.static_after_tokens - before.static_after_tokens
    if more > 0:
        lines.append(
            f"warning: static block(s) {', '.join(after.static_after)} "
            "now follow request-dependent text: "
            f"every request prefills {approx}{more:,} more "
            f"tokens (~{more / PREFILL_TOK_S:.1f} s at "
            f"{PREFILL_TOK_S:.0f} tok/s on the CPU route); put static blocks first"
        )
    return lines


def _short(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
