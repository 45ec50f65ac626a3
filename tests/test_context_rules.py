"""Rule files: frontmatter, folders, what is skipped; packing under the context limits."""

from __future__ import annotations

import pytest

from gate.context import inject, rules


@pytest.mark.parametrize(
    ("text", "description", "body"),
    [
        ("---\ndescription: Writing migrations.\n---\nUse down steps.\n", "Writing migrations.", "Use down steps."),
        ('---\ndescription: "Styling: CSS, layout"\n---\nBody', "Styling: CSS, layout", "Body"),
        ("---\ndescription: 'It''s about C# code'\n---\nBody", "It's about C# code", "Body"),
        ("---\ndescription: plain text # a comment\n---\nBody", "plain text", "Body"),
        ("---\ntitle: x\ndescription: >-\n  Folded over\n  two lines.\nother: y\n---\nBody", "Folded over two lines.", "Body"),
        ("---\ndescription: Continued\n  on the next line\n---\nBody", "Continued on the next line", "Body"),
        ("---\r\nDescription: Windows line ends\r\n---\r\nBody\r\n", "Windows line ends", "Body"),
        ("---\ndescription: Tradução da interface\n---\nCorpo", "Tradução da interface", "Corpo"),
        ("---\ntitle: no description\n---\nBody", None, "Body"),
        ("---\ndescription:\n---\nBody", None, "Body"),
        ("No frontmatter at all.", None, "No frontmatter at all."),
        ("---\ndescription: never closed\nBody", None, "---\ndescription: never closed\nBody"),
    ],
)
def test_frontmatter(text, description, body):
    assert rules.parse(text) == (description, body)


def write(folder, name, text):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return str(folder / name)


def test_project_rules_override_the_owners_by_name_and_only_md_files_count(tmp_path):
    user, project = tmp_path / "user", tmp_path / "project"
    write(user, "a.md", "---\ndescription: user a\n---\nA")
    write(user, "b.md", "---\ndescription: user b\n---\nB")
    b = write(project, "b.md", "---\ndescription: project b\n---\nB2")
    write(project, "notes.txt", "---\ndescription: not a rule\n---\nX")
    write(project, ".hidden.md", "---\ndescription: hidden\n---\nX")
    found, skipped = rules.load([str(user), str(project)])
    assert [(rule.description, rule.body) for rule in found] == [("user a", "A"), ("project b", "B2")]
    assert found[1].path == b and skipped == []


def test_missing_folders_have_no_rules(tmp_path):
    assert rules.load([str(tmp_path / "nowhere")]) == ([], [])


def test_files_skipped_say_why(tmp_path):
    folder = tmp_path / "rules"
    write(folder, "no-description.md", "# Just a body\n")
    write(folder, "empty-body.md", "---\ndescription: nothing below\n---\n\n")
    (folder / "latin1.md").write_bytes("---\ndescription: café\n---\nx".encode("latin-1"))
    (folder / "huge.md").write_bytes(b"---\ndescription: big\n---\n" + b"x" * (rules.MAX_BYTES + 1))
    found, skipped = rules.load([str(folder)])
    assert found == []
    reasons = {item.path.rsplit("/", 1)[1]: item.reason for item in skipped}
    assert "has no description" in reasons["no-description.md"] and "description:" in reasons["no-description.md"]
    assert "nothing after its frontmatter" in reasons["empty-body.md"]
    assert "not UTF-8" in reasons["latin1.md"]
    assert "over 1 MiB" in reasons["huge.md"]


def test_rules_already_given_are_not_read(tmp_path, monkeypatch):
    folder = tmp_path / "rules"
    given = write(folder, "a.md", "---\ndescription: a\n---\nA")
    write(folder, "b.md", "---\ndescription: b\n---\nB")
    read = []
    original = rules.read
    monkeypatch.setattr(rules, "read", lambda path: read.append(path) or original(path))
    found, _ = rules.load([str(folder)], leave_out={given})
    assert [rule.description for rule in found] == ["b"] and given not in read


# -- packing ----------------------------------------------------------------------------------


def rule(name: str, size: int) -> rules.Rule:
    return rules.Rule(f"/rules/{name}.md", name, name.upper() * (size // len(name)))


def test_rules_go_in_whole_while_they_fit_and_the_rest_by_pointer():
    chosen = [rule("first", 4000), rule("second", 4000), rule("third", 4000), rule("fourth", 100)]
    packed = inject.pack(chosen, inject.HOOK_BUDGET)
    assert [path for path, _ in packed] == [r.path for r in chosen]
    texts = [text for _, text in packed]
    assert chosen[0].body in texts[0] and chosen[1].body in texts[1]
    assert texts[2] == inject.pointer(chosen[2])  # would not fit whole
    assert chosen[3].body in texts[3]  # a small one after it still does
    assert inject.units(inject.joined(texts)) <= inject.HOOK_BUDGET


def test_the_budget_counts_utf16_units_as_claude_code_does():
    emoji = rules.Rule("/rules/e.md", "e", "😀" * 4990)  # 9,980 units, 4,990 code points
    [(_, text)] = inject.pack([emoji], inject.HOOK_BUDGET)
    assert text == inject.pointer(emoji)
    assert inject.units("😀é") == 3


def test_a_rule_whose_pointer_does_not_fit_stays_pending():
    many = [rule(f"r{at:03d}", 50) for at in range(200)]
    packed = inject.pack(many, 2000)
    assert 0 < len(packed) < 200
    assert inject.units(inject.joined([text for _, text in packed])) <= 2000


def test_the_mod_packs_to_its_own_larger_limit():
    big = rule("big", 30_000)
    assert inject.pack([big], inject.HOOK_BUDGET) == [(big.path, inject.pointer(big))]
    assert inject.pack([big], inject.MOD_BUDGET) == [(big.path, inject.entry(big))]
