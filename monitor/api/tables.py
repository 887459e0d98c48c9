"""The results as tables: :class:`Table` (rows of the JSON document) and :class:`Row` (one
object of it), each giving its records or a pandas DataFrame.

pandas is imported only inside ``to_pandas``, when it is called (the ``monitor[pandas]`` extra).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from monitor.core.errors import MissingDependency

__all__ = ["Row", "Table"]


@dataclass(frozen=True)
class Table(Sequence[dict[str, Any]]):
    """Rows of the JSON document (workers, items, pairs, flags, agreement measures): a
    sequence of dicts, ``table["w1"]`` the row whose ``key`` column is ``"w1"``."""

    name: str
    key: str | None
    rows: tuple[dict[str, Any], ...]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def __getitem__(self, index: Any) -> Any:  # noqa: ANN401 - int, slice or a key
        if isinstance(index, str):
            for row in self.rows:
                if self.key is not None and row.get(self.key) == index:
                    return row
            raise KeyError(f"no {self.key} {index!r} in {self.name}")
        return self.rows[index]

    def to_records(self) -> list[dict[str, Any]]:
        """The rows as a list of dicts (copies: changing them changes nothing here)."""
        return [orjson.loads(orjson.dumps(row)) for row in self.rows]

    def to_pandas(self) -> Any:  # noqa: ANN401 - pandas is optional
        """The rows as a pandas DataFrame, one column a key (pandas: ``monitor[pandas]``)."""
        pandas = _pandas()
        columns = list(dict.fromkeys(k for row in self.rows for k in row))
        return pandas.DataFrame.from_records(self.to_records(), columns=columns)


@dataclass(frozen=True)
class Row(Mapping[str, Any]):
    """One object of the JSON document (the verdict) as a read-only mapping."""

    name: str
    data: dict[str, Any]

    def __getitem__(self, key: str) -> Any:  # noqa: ANN401
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def to_records(self) -> list[dict[str, Any]]:
        """``[the object]`` (a copy)."""
        return [orjson.loads(orjson.dumps(self.data))]

    def to_pandas(self) -> Any:  # noqa: ANN401 - pandas is optional
        """A one-row pandas DataFrame (pandas: ``monitor[pandas]``)."""
        return _pandas().DataFrame.from_records(self.to_records(), columns=list(self.data))


def _pandas() -> Any:  # noqa: ANN401
    try:
        import pandas  # type: ignore[import-untyped]
    except ModuleNotFoundError:
        raise MissingDependency(
            "to_pandas needs pandas, which is not installed", 'pip install "monitor[pandas]"'
        ) from None
    return pandas
