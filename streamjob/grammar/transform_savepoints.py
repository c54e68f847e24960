"""The builder methods of the savepoint statements (issue 30; docs/checkpoints.md), mixed
into :class:`~streamjob.grammar.transform.Builder` (kept apart, like their grammar rules):
``CREATE SAVEPOINT``, ``SHOW SAVEPOINTS``, ``DROP SAVEPOINT``, and the savepoint parts of
``STOP ... WITH SAVEPOINT`` and ``START ... FROM SAVEPOINT | FROM CHECKPOINT AT``."""

from __future__ import annotations

import datetime as _dt
import re

from lark import Tree

from streamjob.grammar.lexical import ident_value, unescape_string
from streamjob.grammar.statements import CreateSavepoint, DropSavepoint, ShowSavepoints

__all__ = ["SavepointsBuilder"]

#: A savepoint name: it names a folder beside the job's checkpoints, so it is a plain
#: identifier even when written quoted.
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class SavepointsBuilder:
    """Builder methods (``_<rule>``) of the savepoint statements; uses the Builder's
    ``name``, ``find``, ``position``, ``error`` and ``locations``."""

    def savepoint_name(self, tree: Tree) -> str:
        """The savepoint name of the first ``ident`` child of ``tree``; its position is
        ``where("savepoint")``.

        Raises:
            ParseError: not a plain identifier (at the name).
        """
        token = self.find(tree, "ident").children[0]
        self.locations["savepoint"] = self.position(token.start_pos)
        value = ident_value(token)
        if not _NAME.match(value):
            raise self.error(f"'{value}' is not a savepoint name: use letters, digits and _ "
                             "(at most 128, not starting with a digit)", token.start_pos)
        return value

    def _create_savepoint(self, tree: Tree):
        return CreateSavepoint, dict(savepoint=self.savepoint_name(tree),
                                     name=self.name(self.find(tree, "qualified_name")))

    def _drop_savepoint(self, tree: Tree):
        return DropSavepoint, dict(savepoint=self.savepoint_name(tree),
                                   name=self.name(self.find(tree, "qualified_name")))

    def _show_savepoints(self, tree: Tree):
        qname = self.find(tree, "qualified_name")
        return ShowSavepoints, dict(name=self.name(qname) if qname is not None else None)

    def stop_savepoint(self, tree: Tree) -> str | None:
        """The savepoint of ``STOP STREAMJOB j WITH SAVEPOINT sp``, or None."""
        found = self.find(tree, "stop_savepoint")
        return self.savepoint_name(found) if found is not None else None

    def start_savepoint(self, tree: Tree) -> dict:
        """``from_savepoint`` and ``checkpoint_at`` (ms since the epoch) of a START.

        Raises:
            ParseError: the time is not ``'yyyy-MM-dd HH:mm:ss'`` (at the string).
        """
        out: dict = {}
        found = self.find(tree, "from_savepoint")
        if found is not None:
            out["from_savepoint"] = self.savepoint_name(found)
            reset = self.find(found, "state_reset")
            if reset is not None:
                self.locations["state_reset"] = self.position(reset.meta.start_pos)
                out["state_reset"] = True
        found = self.find(tree, "checkpoint_at")
        if found is not None:
            token = found.children[0]
            self.locations["timestamp"] = self.position(token.start_pos)
            text = unescape_string(token.value).strip()
            try:
                at = _dt.datetime.fromisoformat(text)
            except ValueError:
                raise self.error(f"'{text}' is not a time: write 'yyyy-MM-dd HH:mm:ss' (UTC)",
                                 token.start_pos) from None
            if at.tzinfo is None:
                at = at.replace(tzinfo=_dt.timezone.utc)
            out["checkpoint_at"] = int(at.timestamp() * 1000)
        return out
