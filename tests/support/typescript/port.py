"""The TypeScript extension's reader of a memory file, ported faithfully to Python.

chandra447/pi-hermes-memory at 71beae8, `src/store/memory-store.ts`: `readFileState` (#L762,
the split on `ENTRY_DELIMITER` of `src/constants.ts`) and `decodeEntry` (#L620, the metadata
regex). `memory_reader.mjs` beside this file runs the original functions under node.
"""

from __future__ import annotations

import base64
import re
from typing import Any

TS_DELIMITER = "\n§\n"
TS_METADATA = re.compile(
    r"^(.*?)\s*<!--\s*created=([^,]+),\s*last=([^,>]+)(?:,\s*project64=([A-Za-z0-9_-]+))?"
    r"\s*-->\s*$",
    re.S,
)


def js_trim(text: str) -> str:
    """String.prototype.trim: whitespace and line terminators, U+FEFF included."""
    return re.sub(r"^[\s\ufeff]+|[\s\ufeff]+$", "", text)


def ts_parse(content: str) -> list[dict[str, Any]]:
    """Each entry as the extension decodes it, plus `metadata`: whether the regex matched."""
    if not js_trim(content):
        return []
    raws = [e for e in (js_trim(c) for c in content.split(TS_DELIMITER)) if e]
    entries = []
    for raw in raws:
        match = TS_METADATA.match(raw)
        if match is None:
            entries.append({"text": js_trim(raw), "metadata": False})
            continue
        project = None
        if match[4]:
            padded = match[4] + "=" * (-len(match[4]) % 4)
            project = base64.urlsafe_b64decode(padded).decode("utf-8").strip() or None
        entries.append(
            {
                "text": js_trim(match[1]),
                "created": match[2].strip(),
                "lastReferenced": match[3].strip(),
                "project": project,
                "metadata": True,
            }
        )
    return entries
