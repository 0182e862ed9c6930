"""The `.gitignore` subset of the knowledge indexer (ADR 0048)."""

from __future__ import annotations

import pytest
from pi_hermes_memory.domain.knowledge.gitignore import is_ignored, parse_gitignore

RULES = parse_gitignore(
    "\n".join(
        [
            "# comment",
            "",
            "*.log",
            "!keep.log",
            "build/",
            "/top.txt",
            "docs/**/draft-*.md",
            "**/cache",
            "tmp/**",
            "\\#literal",
            "[abc]x.md",
            "notes?.md",
        ]
    )
)


@pytest.mark.parametrize(
    ("path", "is_dir", "ignored"),
    [
        ("a.log", False, True),
        ("deep/er/b.log", False, True),
        ("keep.log", False, False),
        ("sub/keep.log", False, False),
        ("build", True, True),
        ("src/build", True, True),
        ("build", False, False),  # dir-only pattern, a file named build
        ("top.txt", False, True),
        ("sub/top.txt", False, False),  # anchored to the root
        ("docs/draft-1.md", False, True),
        ("docs/a/b/draft-2.md", False, True),
        ("docs/final.md", False, False),
        ("cache", True, True),
        ("x/y/cache", True, True),
        ("tmp/a.md", False, True),
        ("tmp/a/b.md", False, True),
        ("#literal", False, True),
        ("ax.md", False, True),
        ("dx.md", False, False),
        ("notes1.md", False, True),
        ("notes12.md", False, False),
        ("readme.md", False, False),
    ],
)
def test_patterns(path: str, is_dir: bool, ignored: bool) -> None:
    assert is_ignored(RULES, path, is_dir=is_dir) is ignored


def test_a_nested_gitignore_applies_below_its_folder_and_the_last_rule_wins() -> None:
    rules = (*parse_gitignore("*.md\n"), *parse_gitignore("!keep.md\n/only-here.md\n", "sub"))
    assert is_ignored(rules, "a.md", is_dir=False)
    assert is_ignored(rules, "other/keep.md", is_dir=False)
    assert not is_ignored(rules, "sub/keep.md", is_dir=False)
    assert is_ignored(rules, "sub/x/only-here.md", is_dir=False)  # *.md still
    assert not is_ignored(rules, "sub.md/x", is_dir=True)


def test_unusable_lines_are_skipped() -> None:
    assert parse_gitignore("/\n!\n   \n[unclosed\n") != ()  # "[unclosed" is a literal name
    rules = parse_gitignore("[unclosed\n")
    assert is_ignored(rules, "[unclosed", is_dir=False)
