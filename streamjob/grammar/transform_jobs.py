"""The builder methods of the job statements (CREATE [OR REPLACE], ALTER, START, STOP and
DROP STREAMJOB), mixed into :class:`~streamjob.grammar.transform.Builder` (kept apart, as
the function, savepoint and shadow statements are)."""

from __future__ import annotations

import datetime as _dt

from lark import Token, Tree

from streamjob.grammar.lexical import unescape_string
from streamjob.grammar.statements import (
    AlterStreamJob,
    CreateStreamJob,
    DropStreamJob,
    ReplaceStreamJobQuery,
    StartStreamJob,
    StopStreamJob,
)

__all__ = ["JobsBuilder"]


class JobsBuilder:
    """Builder methods (``_<rule>``) of the job statements; uses the Builder's ``name``,
    ``find``, ``position``, ``error``, ``properties``, ``locations`` and the savepoint
    clauses (``start_savepoint``, ``stop_savepoint``)."""

    def _job_query(self, tree: Tree) -> dict:
        """``query`` and ``query_position`` of a job statement's ``AS ("...")``.

        Raises:
            ParseError: the query is empty (at its string).
        """
        token = next(c for c in tree.children if isinstance(c, Token) and c.type == "STRING")
        query = unescape_string(token.value)
        if not query.strip():
            raise self.error("the query of a STREAMJOB is empty", token.start_pos, token.value)
        return dict(query=query, query_position=self.position(token.start_pos + 1))

    def _create_streamjob(self, tree: Tree):
        jobprops = self.find(tree, "jobproperties")
        return CreateStreamJob, dict(
            name=self.name(self.find(tree, "qualified_name")),
            **self._job_query(tree),
            if_not_exists=self.find(tree, "if_not_exists") is not None,
            properties=self.properties(jobprops) if jobprops is not None else (),
        )

    def _replace_query(self, tree: Tree, or_replace: bool):
        """ALTER STREAMJOB j AS (...) and CREATE OR REPLACE STREAMJOB (issue 30)."""
        jobprops = self.find(tree, "jobproperties")
        found = self.find(tree, "upgrade_from")
        if found is not None:
            self.locations["from"] = self.position(found.meta.start_pos)
        reset = self.find(tree, "state_reset")
        if reset is not None:
            self.locations["state_reset"] = self.position(reset.meta.start_pos)
        return ReplaceStreamJobQuery, dict(
            name=self.name(self.find(tree, "qualified_name")),
            **self._job_query(tree),
            properties=self.properties(jobprops) if jobprops is not None else (),
            or_replace=or_replace,
            start_from=self._start_position(found) if found is not None else None,
            state_reset=reset is not None,
        )

    def _alter_streamjob_as(self, tree: Tree):
        return self._replace_query(tree, or_replace=False)

    def _create_or_replace_streamjob(self, tree: Tree):
        return self._replace_query(tree, or_replace=True)

    def _start_streamjob(self, tree: Tree):
        checkpoint = next((c for c in tree.children if isinstance(c, Token) and c.type == "INT"), None)
        if checkpoint is not None:
            self.locations["checkpoint"] = self.position(checkpoint.start_pos)
        if checkpoint is not None and len(checkpoint.value.lstrip("0")) > 18:
            raise self.error("the checkpoint id is too large", checkpoint.start_pos)
        return StartStreamJob, dict(
            name=self.name(self.find(tree, "qualified_name")),
            from_checkpoint=int(checkpoint.value) if checkpoint is not None else None,
            start_from=self._start_position(tree),
            **self.start_savepoint(tree),
        )

    def _start_position(self, tree: Tree) -> str | None:
        """``earliest``, ``latest``, or a timestamp as ms since the epoch (text) for START
        ... FROM EARLIEST | LATEST | TIMESTAMP t; t is ms or 'yyyy-mm-dd[ hh:mm:ss]' (UTC)."""
        for child in tree.children:
            if isinstance(child, Tree) and child.data in ("start_earliest", "start_latest"):
                return child.data.removeprefix("start_")
            if isinstance(child, Tree) and child.data == "start_timestamp":
                token = child.children[0]
                self.locations["timestamp"] = self.position(token.start_pos)
                if token.type == "INT":
                    return str(int(token.value))
                text = unescape_string(token.value).strip()
                try:
                    at = _dt.datetime.fromisoformat(text)
                except ValueError:
                    raise self.error(f"'{text}' is not a timestamp: write 'yyyy-mm-dd hh:mm:ss' "
                                     "(UTC) or milliseconds since the epoch", token.start_pos) from None
                if at.tzinfo is None:
                    at = at.replace(tzinfo=_dt.timezone.utc)
                return str(int(at.timestamp() * 1000))
        return None

    def _stop_streamjob(self, tree: Tree):
        return StopStreamJob, dict(name=self.name(self.find(tree, "qualified_name")),
                                   savepoint=self.stop_savepoint(tree))

    def _drop_streamjob(self, tree: Tree):
        return DropStreamJob, dict(
            name=self.name(self.find(tree, "qualified_name")),
            if_exists=self.find(tree, "if_exists") is not None,
        )

    def _alter_streamjob(self, tree: Tree):
        return AlterStreamJob, dict(
            name=self.name(self.find(tree, "qualified_name")),
            properties=self.properties(self.find(tree, "jobproperties")),
        )
