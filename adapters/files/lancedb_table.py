"""Read the second seed's LanceDB directory (pi-memory / memory-lancedb-pro, ADR 0075).

The TypeScript plugin keeps its memories in the table `memories` of a LanceDB directory (its
`dbPath`): columns `id`, `text`, `vector` (fixed-size list of float32), `category`, `scope`,
`importance` (double), `timestamp` (double, epoch milliseconds; old rows seconds) and
`metadata` (a JSON string), as `src/store.ts` of CortexReach/memory-lancedb-pro creates it.
Older tables lack `scope`, `timestamp` or `metadata` (the plugin adds them on open); they read
as missing here. The `lancedb` package (the optional `[lancedb]` extra) is imported only when
a directory is read, never with the package.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Final

import attrs
from pi_hermes_memory.errors import InvalidArgument

TABLE: Final = "memories"
EXTRA_HINT: Final = (
    "reading a LanceDB directory needs the optional extra: "
    "pip install 'pi-hermes-memory[lancedb]' (from a checkout: pip install -e '.[lancedb]')"
)
_COLUMNS: Final = ("id", "text", "category", "scope", "importance", "timestamp", "metadata")


@attrs.frozen(kw_only=True)
class SeedTable:
    """The rows of the table as second-seed records (the keys of its JSON export), and the
    vectors by row number (None: the row has none, or an unusable one)."""

    path: str
    records: tuple[dict[str, Any], ...]
    vectors: tuple[tuple[float, ...] | None, ...]
    #: the vector column's width (None: no fixed-size vector column)
    dimension: int | None


def is_lancedb_dir(path: Path) -> bool:
    """Whether `path` is a LanceDB directory holding the seed's table (or the table itself)."""
    return path.is_dir() and ((path / f"{TABLE}.lance").is_dir() or path.name == f"{TABLE}.lance")


def read_seed_table(path: Path) -> SeedTable:
    """Every row of the `memories` table under `path` (the seed's `dbPath`, or its
    `memories.lance` folder). InvalidArgument when the extra is missing or the directory
    holds no readable table (nothing is written before the whole table was read)."""
    try:
        import lancedb  # type: ignore[import-untyped,unused-ignore]
        import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        raise InvalidArgument(f"{EXTRA_HINT}; nothing was imported") from None
    folder = path.parent if path.name == f"{TABLE}.lance" else path
    try:
        table = lancedb.connect(str(folder)).open_table(TABLE)
        data = table.to_arrow()
    except Exception as exc:  # the driver's own errors never cross this function
        raise InvalidArgument(
            f"{path}: no readable LanceDB table {TABLE!r} ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:200] if str(exc) else 'unreadable'}); nothing was imported"
        ) from None
    schema = data.schema
    if "text" not in schema.names:
        raise InvalidArgument(
            f"{path}: the table {TABLE!r} has no text column (not the seed's table); "
            "nothing was imported"
        )
    dimension: int | None = None
    if "vector" in schema.names:
        vtype = schema.field("vector").type
        if pa.types.is_fixed_size_list(vtype):
            dimension = int(vtype.list_size)
    columns = {name: data.column(name).to_pylist() for name in _COLUMNS if name in schema.names}
    raw_vectors = data.column("vector").to_pylist() if "vector" in schema.names else None
    records: list[dict[str, Any]] = []
    vectors: list[tuple[float, ...] | None] = []
    for i in range(data.num_rows):
        records.append({name: values[i] for name, values in columns.items()})
        vectors.append(_vector(raw_vectors[i] if raw_vectors is not None else None))
    return SeedTable(
        path=str(path), records=tuple(records), vectors=tuple(vectors), dimension=dimension
    )


def _vector(value: Any) -> tuple[float, ...] | None:
    """A usable vector (finite, not all zero) or None."""
    if not isinstance(value, list) or not value:
        return None
    try:
        out = tuple(float(x) for x in value)
    except (TypeError, ValueError):
        return None
    if not all(math.isfinite(x) for x in out) or not any(out):
        return None
    return out
