"""Smoke test of the scanner benchmark: a tiny corpus; the report names every class.

Recall and false-positive targets are measured by `make bench-scanner`, not asserted here.
"""

from __future__ import annotations

from tests.bench import scanner
from tests.bench.scanner_corpus import HELDOUT, INJECTION_TEMPLATES, SECRET_KINDS, TUNE, build


def test_corpus_is_reproducible_and_covers_the_classes() -> None:
    a = build(7, per_kind=1, per_template=1, benign=50)
    b = build(7, per_kind=1, per_template=1, benign=50)
    assert [s.text for s in a] == [s.text for s in b]
    assert {s.cls for s in a} == {"secret", "injection", "unicode_bad", "unicode_ok", "benign"}
    assert len(SECRET_KINDS) >= scanner.MIN_SECRET_KINDS
    assert set(INJECTION_TEMPLATES) == {"en", "zh", "ja", "ko", "es", "de", "fr"}
    for classes in INJECTION_TEMPLATES.values():
        assert set(classes) == {"override", "persistence", "exfiltration", "roleplay"}
        assert all(split[TUNE] and split[HELDOUT] for split in classes.values())


def test_benchmark_reports_every_class() -> None:
    result = scanner.evaluate(build(11, per_kind=1, per_template=1, benign=40))
    text = scanner.render(result)
    for heading in ("## Secrets", "## Prompt injection", "## Invisible Unicode", "## Benign"):
        assert heading in text
    for label in ("recall", "tune", "heldout", "false positives", "dangerous handled"):
        assert label in text
    figures = scanner.summary(result)
    assert set(figures["injection_recall_by"]["lang"]) == set(INJECTION_TEMPLATES)
    assert 0.0 <= figures["false_positive_rate"] <= 1.0
    assert figures["secret_kinds"] == len(SECRET_KINDS)


def test_main_small_run_exits_zero(capsys: object) -> None:
    assert scanner.main(["--small"]) == 0
