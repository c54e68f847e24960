"""``EXPLAIN`` in the parse tree (issue 18), kept apart from the core builder:
:class:`ExplainBuilder` is a mixin of :class:`streamjob.grammar.transform.Builder`, whose
helpers (``find``, ``name``, ``position``, ``raw_tail``) and the bare INSERT's reading
(:meth:`.slipstream.SlipstreamForms._insert_into`) it uses.
"""

from __future__ import annotations

from lark import Token, Tree

from streamjob.grammar.statements import Explain

__all__ = ["ExplainBuilder"]


class ExplainBuilder:
    """Builder method of ``EXPLAIN [EXTENDED] [STREAMJOB] j | INSERT INTO ... | ALTER
    STREAMJOB j AS (...) | CREATE OR REPLACE STREAMJOB j AS (...)``."""

    def _explain(self, tree: Tree):
        extended = self.find(tree, "explain_extended") is not None
        for form, or_replace in (("alter_streamjob_as", False),
                                 ("create_or_replace_streamjob", True)):
            upgrade = self.find(tree, form)
            if upgrade is not None:  # EXPLAIN ALTER STREAMJOB j AS (...) (issue 30)
                cls, fields = self._replace_query(upgrade, or_replace=or_replace)
                return Explain, dict(name=fields["name"], extended=extended,
                                     change=cls(position=self.position(upgrade.meta.start_pos),
                                                text="", locations=self.locations, **fields))
        token = next((c for c in tree.children
                      if isinstance(c, Token) and c.type == "INSERT_STATEMENT"), None)
        if token is None:
            return Explain, dict(name=self.name(self.find(tree, "qualified_name")),
                                 extended=extended)
        _cls, fields = self._insert_into(Tree("insert_into", [token]))
        start, _end = self.raw_tail(token)
        return Explain, dict(query=fields["query"], target=fields["target"],
                             query_position=self.position(start), extended=extended)
