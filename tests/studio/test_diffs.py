"""Side-by-side rows: aligned line numbers, context around each change, long runs folded."""

from studio.harnesses.diffs import side_by_side


def _rows(old, new):
    return [(r.kind, r.left_no, r.left, r.right_no, r.right) for r in side_by_side(old, new)]


def test_an_appended_line_shows_three_lines_of_context_before_it():
    old = "\n".join(f"line {i}" for i in range(1, 46))
    rows = _rows(old, old + "\nnew rule")
    assert rows[0] == ("skip", None, "42 unchanged lines", None, "")
    assert [r[1] for r in rows[1:4]] == [43, 44, 45]
    assert rows[-1] == ("insert", None, "", 46, "new rule")


def test_a_changed_line_sits_beside_its_replacement_with_context_on_both_sides():
    old = "\n".join(f"line {i}" for i in range(1, 30))
    rows = _rows(old, old.replace("line 15", "LINE 15"))
    changed = [r for r in rows if r[0] == "replace"]
    assert changed == [("replace", 15, "line 15", 15, "LINE 15")]
    kinds = [r[0] for r in rows]
    assert kinds == [
        "skip",
        "equal",
        "equal",
        "equal",
        "replace",
        "equal",
        "equal",
        "equal",
        "skip",
    ]


def test_uneven_replacements_pad_the_shorter_side():
    rows = _rows("a\nb\nc", "a\nX\nY\nZ\nc")
    assert ("replace", 2, "b", 2, "X") in rows
    assert ("insert", None, "", 3, "Y") in rows and ("insert", None, "", 4, "Z") in rows
    assert rows[-1] == ("equal", 3, "c", 5, "c")


def test_the_unified_view_is_single_spaced(db, personas, demo_version, demo_files):
    """Each line is a block of its own; a line break between the blocks drew a blank line under
    every line."""
    from studio_testing import client_for, edit_skill_rule

    from studio.harnesses.services import harness_version_create

    harness_version_create(
        harness=demo_version.harness,
        files=edit_skill_rule(demo_files),
        author=personas.operator,
        message="v2",
        parent=demo_version,
    )
    page = (
        client_for(personas.operator)
        .get("/h/livestream-avatar/diff/?a=1&b=2&mode=unified")
        .content.decode()
    )
    udiff = page[page.index('<pre class="udiff">') :]
    udiff = udiff[: udiff.index("</pre>")]
    assert '<span class="add">' in udiff and "</span>\n" not in udiff
