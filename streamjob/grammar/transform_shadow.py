"""The builder methods of the shadow-run statements (issue 30 point 4; docs/upgrades.md
"Shadow runs"), mixed into :class:`~streamjob.grammar.transform.Builder` (kept apart,
like their grammar rules): ``ALTER STREAMJOB j AS (...) WITH SHADOW [JOBPROPERTIES(...)]``,
``PROMOTE SHADOW``, ``DISCARD SHADOW`` and ``SHOW SHADOW FOR STREAMJOB j``."""

from __future__ import annotations

from lark import Token, Tree

from streamjob.grammar.lexical import unescape_string
from streamjob.grammar.statements import AlterShadow, DiscardShadow, PromoteShadow, ShowShadow

__all__ = ["ShadowBuilder"]


class ShadowBuilder:
    """Builder methods (``_<rule>``) of the shadow statements; uses the Builder's
    ``name``, ``find``, ``position``, ``error`` and ``properties``."""

    def _alter_shadow(self, tree: Tree):
        token = next(c for c in tree.children if isinstance(c, Token) and c.type == "STRING")
        query = unescape_string(token.value)
        if not query.strip():
            raise self.error("the query of a STREAMJOB is empty", token.start_pos, token.value)
        props = self.find(tree, "jobproperties")
        return AlterShadow, dict(
            name=self.name(self.find(tree, "qualified_name")), query=query,
            query_position=self.position(token.start_pos + 1),
            properties=self.properties(props) if props is not None else ())

    def _promote_shadow(self, tree: Tree):
        return PromoteShadow, dict(name=self.name(self.find(tree, "qualified_name")))

    def _discard_shadow(self, tree: Tree):
        return DiscardShadow, dict(name=self.name(self.find(tree, "qualified_name")))

    def _show_shadow(self, tree: Tree):
        return ShowShadow, dict(name=self.name(self.find(tree, "qualified_name")))
