"""Rendering user-authored skill Markdown to HTML that is safe to show.

Markdown is converted with python-markdown and then cleaned with nh3 (an
allow-list HTML sanitiser): scripts, event handlers and javascript: URLs are
removed, so a skill body can never run code in a reviewer's browser.
"""

from __future__ import annotations

import markdown as md
import nh3
import yaml

from harness.skills import split_front_matter

ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "strong", "em", "b", "i",
    "code", "pre", "blockquote", "a", "table", "thead", "tbody", "tr", "th", "td", "del", "span",
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
    """Markdown -> sanitised HTML."""
    return sanitise_html(md.markdown(text, extensions=["fenced_code", "tables", "sane_lists"]))


def split_skill(text: str) -> tuple[dict | None, str]:
    """(front matter as a dict or None when absent/unreadable, Markdown body)."""
    front_text, body, _, _ = split_front_matter(text, file="SKILL.md")
    if front_text is None:
        return None, text
    try:
        front = yaml.safe_load(front_text)
    except yaml.YAMLError:
        front = None
    return (front if isinstance(front, dict) else None), body


def render_skill_preview(text: str) -> dict:
    """{'front': dict|None, 'html': sanitised body HTML} for the skill preview panel."""
    front, body = split_skill(text)
    return {"front": front, "html": render_markdown(body)}
