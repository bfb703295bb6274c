"""Rendering user-authored skill Markdown to HTML that is safe to show.

Markdown is converted with cmark-gfm (GitHub's CommonMark, tables and
strikethrough; C, built to take linear time on any input, so a body of
pathological brackets cannot stall a preview: python-markdown took 5.5 s on 4,000
'[' and grew with the square of the length) and then cleaned with nh3 (an
allow-list HTML sanitiser): raw HTML is dropped by cmark-gfm's safe mode, and
scripts, event handlers and javascript: URLs by nh3, so a skill body can never
run code in a reviewer's browser.
"""

from __future__ import annotations

import cmarkgfm
import nh3
from cmarkgfm.cmark import Options

from harness.bundle import MAX_FILE_BYTES
from harness.skills import split_front_matter
from harness.yamlio import REFUSED, load_yaml

ALLOWED_TAGS = {
    "p",
    "br",
    "hr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "ul",
    "ol",
    "li",
    "strong",
    "em",
    "b",
    "i",
    "code",
    "pre",
    "blockquote",
    "a",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "del",
    "span",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "th": {"align"}, "td": {"align"}}


def sanitise_html(html: str) -> str:
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


def render_markdown(text: str) -> str:
    """Markdown -> sanitised HTML (linear in the text's length)."""
    return sanitise_html(
        cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_DEFAULT)
    )


def split_skill(text: str) -> tuple[dict | None, str, str | None]:
    """(front matter as a dict or None when absent/unreadable, Markdown body, refusal).

    The front matter is read by the Harness reader, so it is bounded like every
    bundle file; ``refusal`` says why it was not read at all (too large, too
    deep, aliases), None otherwise. A front matter still being typed may simply
    be unreadable: then it is None with no refusal.
    """
    front_text, body, _, _ = split_front_matter(text, file="SKILL.md")
    if front_text is None:
        return None, text, None
    front, _lines, problems = load_yaml(front_text, file="SKILL.md", line_offset=1)
    refused = next((p for p in problems if p.field == REFUSED), None)
    if refused is not None:
        return None, body, f"front matter, line {refused.line}: {refused.message}"
    return (front if isinstance(front, dict) else None), body, None


def render_skill_preview(text: str) -> dict:
    """{'front': dict|None, 'html': sanitised body HTML, 'refused': why nothing was shown, or
    None}."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_BYTES:
        return {
            "front": None,
            "html": "",
            "refused": f"SKILL.md is {size} bytes, larger than "
            f"{MAX_FILE_BYTES // 1024} KiB (the limit per file); nothing is previewed",
        }
    front, body, refused = split_skill(text)
    return {"front": front, "html": render_markdown(body), "refused": refused}
