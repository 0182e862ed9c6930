"""The LLM classifier over a real child-process completer (tests/support/fake_llm.py) passes
the `SkillClassifier` contract: its replies, and its deadline, go through a real process."""

from __future__ import annotations

import json
import sys

import pytest
from pi_hermes_memory.adapters.providers.command_llm import CommandCompleter
from pi_hermes_memory.skills.classifier_llm import LlmClassifier
from pi_hermes_memory.testing import SkillClassifierContract
from pi_hermes_memory.testing.classifier_contracts import CONTRACT_SKILLS

from tests.support.fake_llm import FAKE_LLM

REPLY = json.dumps(
    {
        "classifications": [
            {
                "skill_id": s.skill_id,
                "task_domain": "deployment",
                "scope_verdict": "global-safe",
                "reasons": ["works in any repository"],
            }
            for s in CONTRACT_SKILLS
        ]
    }
)


class TestLlmClassifierOverAChildProcess(SkillClassifierContract):
    @pytest.fixture
    def skill_classifier(self) -> LlmClassifier:
        return LlmClassifier(CommandCompleter([sys.executable, FAKE_LLM, "--reply", REPLY]))
