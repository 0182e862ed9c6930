"""Correction rules from the configuration (issue 12 §3; the detection itself is pure, in
`pi_hermes_memory.domain.learning.corrections`)."""

from __future__ import annotations

from typing import Any

from pi_hermes_memory.domain.learning.corrections import CorrectionRules

__all__ = ["rules_from_config"]


def rules_from_config(config: Any) -> CorrectionRules | None:
    """The configured correction rules, or None when `correctionDetection` is off. A missing
    config (a store built by hand) means the defaults."""
    if config is None:
        return CorrectionRules.build()
    if not getattr(config, "correction_detection", True):
        return None
    return CorrectionRules.build(
        strong=getattr(config, "correction_strong_patterns", None),
        weak=getattr(config, "correction_weak_patterns", None),
        negative=getattr(config, "correction_negative_patterns", None),
        directive_words=getattr(config, "correction_directive_words", None),
    )
