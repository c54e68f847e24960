"""A file stream as a :class:`~streamjob.connectors.sources.StreamSource`: a directory
read by Spark's file source, each file once (DESIGN §7). JSON files are read as text
lines whose keys the Spark room matches to the declared columns as a Kafka stream's
(``spark/json_keys.py``); CSV and Parquet with the declared schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...columntypes import ddl
from ..source_base import QuietSource, Reader
from ..spec import Reach


class FileStreamSource(QuietSource):
    """A file stream (:class:`~streamjob.connectors.spec.FileSourceSpec`)."""

    identifier = "files"
    starts_anywhere = False  # a file source has no position but its first file

    def __init__(self, spec) -> None:
        self.spec = spec

    def reader(self, columns, *, start: str | None, max_records: int,
               group_id: str | None, dead_letter=None) -> Reader:
        if self.spec.format == "json":  # text lines, keys matched as a Kafka stream's
            return Reader("text", {"path": self.spec.path}, json_schema=ddl(columns),
                          json_columns=tuple(c["name"] for c in columns))
        return Reader(self.spec.format, {"path": self.spec.path}, ddl(columns))

    def describe(self, *, group_id: str | None, dead_letter_table: str | None,
                 checkpointed: bool, offsets: dict, checkpoint_id: str | None) -> dict:
        out: dict[str, Any] = dict(connector=self.identifier, location=self.spec.path,
                                   format=self.spec.format)
        out["starts_from"] = ("files not yet listed in its checkpoint" if checkpointed
                              else "every file, at every start")
        return out

    def present_files(self) -> set[str]:
        """The files under the stream's path now (absolute paths); hidden and temporary
        files (``.``/``_`` prefix), which Spark's file source skips, are left out."""
        root = Path(self.spec.path.removeprefix("file://"))
        if not root.is_dir():
            return set()
        return {str(p.resolve()) for p in root.rglob("*")
                if p.is_file() and not p.name.startswith((".", "_"))}

    def reach(self) -> Reach:
        return Reach(paths=((self.spec.path, '"path"', "path"),))
