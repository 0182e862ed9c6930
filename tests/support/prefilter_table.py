"""Regenerate `domain/scanning/prefilter_table.py` (ADR 0089):

.venv/bin/python -m tests.support.prefilter_table
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

from pi_hermes_memory.domain import scanning
from pi_hermes_memory.domain.scanning import lazy_re, prefilter

TABLE = Path(__file__).resolve().parents[2] / "domain" / "scanning" / "prefilter_table.py"


def patterns() -> list[tuple[str, int]]:
    """Every pattern of every module of `domain/scanning` (each module is loaded first)."""
    for module in pkgutil.iter_modules(scanning.__path__):
        importlib.import_module(f"{scanning.__name__}.{module.name}")
    return [(p.pattern, p._flags) for p in lazy_re._ALL]


def main() -> None:
    TABLE.write_text(prefilter.render_table(patterns()), encoding="utf-8")
    subprocess.run([sys.executable, "-m", "ruff", "format", "-q", str(TABLE)], check=True)
    print(f"wrote {TABLE}")


if __name__ == "__main__":
    main()
