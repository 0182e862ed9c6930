"""`sessionSearch` in the configuration: the variant and the project map (ADR 0020)."""

from __future__ import annotations

from pathlib import Path

from pi_hermes_memory.config.settings import SessionSearchVariant, parse_config

ROOT = Path("/home/me/.pi/agent")


def parse(raw: object) -> tuple[object, list[tuple[str, str]]]:
    config, warnings = parse_config(
        raw,
        agent_root=ROOT,
        cwd=Path("/home/me/web"),
        environ={"HOME": "/home/me"},
        physical=lambda p: p,
    )
    return config.session_search, [(w.field, w.message) for w in warnings]


def test_defaults() -> None:
    settings, warnings = parse({})
    assert settings.variant is SessionSearchVariant.LEGACY  # type: ignore[attr-defined]
    assert settings.project_map == {}  # type: ignore[attr-defined]
    assert warnings == []


def test_project_map_is_normalised() -> None:
    settings, warnings = parse(
        {
            "sessionSearch": {
                "variant": "anchors",
                "projectMap": {"/home/me/work/api/": "api-main", "~/src": " mine ", "/": "root"},
            }
        }
    )
    assert settings.variant is SessionSearchVariant.ANCHORS  # type: ignore[attr-defined]
    assert settings.project_map == {  # type: ignore[attr-defined]
        "/home/me/work/api": "api-main",
        "/home/me/src": "mine",
        "/": "root",
    }
    assert warnings == []


def test_invalid_entries_are_dropped_with_a_warning() -> None:
    settings, warnings = parse(
        {
            "sessionSearch": {
                "projectMap": {
                    "relative/path": "x",
                    "/ok": "fine",
                    "/bad-name": "a/b",
                    "/empty": "",
                    "/number": 3,
                }
            }
        }
    )
    assert settings.project_map == {"/ok": "fine"}  # type: ignore[attr-defined]
    assert [field for field, _ in warnings] == ["sessionSearch.projectMap"] * 4
    assert "absolute" in warnings[0][1] and "project names" in warnings[1][1]
    wrong, warned = parse({"sessionSearch": {"projectMap": ["x"]}})
    assert wrong.project_map == {}  # type: ignore[attr-defined]
    assert warned == [
        ("sessionSearch.projectMap", "expected an object of working directory -> project name")
    ]
