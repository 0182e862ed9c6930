"""The knowledge base's default limits (ADR 0048, ADR 0063).

Apart from `chunks.py` so that reading the configuration, which spells these defaults, does not
load the chunker (ADR 0105).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEFAULT_CHUNK_CHARS",
    "DEFAULT_FILE_BYTES",
    "DEFAULT_INDEX_BYTES",
    "DEFAULT_INDEX_FILES",
]

#: default cap on a chunk's characters
DEFAULT_CHUNK_CHARS: Final = 2_000
#: default cap on a file's bytes (larger files are skipped and counted)
DEFAULT_FILE_BYTES: Final = 4 * 1024 * 1024
#: default budget of the whole index: files, and bytes of those files (ADR 0063)
DEFAULT_INDEX_FILES: Final = 20_000
DEFAULT_INDEX_BYTES: Final = 256 * 1024 * 1024
