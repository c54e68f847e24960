"""The builder methods of SHOW CREATE, the database statements, SHOW TOPICS and PRINT
(issue 16), mixed into :class:`~streamjob.grammar.transform.Builder` (kept apart, like
their grammar rules, so that grammar work elsewhere merges cleanly)."""

from __future__ import annotations

from lark import Token, Tree

from streamjob.grammar.lexical import ident_value, unescape_string
from streamjob.grammar.statements import (
    CreateDatabase,
    DropDatabase,
    PrintTopic,
    QualifiedName,
    ShowCreate,
    ShowDatabases,
    ShowTopics,
    UseDatabase,
)

__all__ = ["CatalogStatementsBuilder"]


class CatalogStatementsBuilder:
    """Builder methods (``_<rule>``) of the issue-16 statements; uses the Builder's
    ``name``, ``find``, ``position``, ``error`` and ``locations``."""

    def _show_create(self, tree: Tree):
        kind = next(c.data.removeprefix("kind_") for c in tree.children
                    if isinstance(c, Tree) and c.data.startswith("kind_"))
        return ShowCreate, dict(name=self.name(self.find(tree, "qualified_name")), kind=kind)

    def database(self, tree: Tree) -> str:
        ident = self.find(tree, "ident")
        self.locations.setdefault("name", self.position(ident.children[0].start_pos))
        return ident_value(ident.children[0])

    def _create_database(self, tree: Tree):
        return CreateDatabase, dict(database=self.database(tree),
                                    if_not_exists=self.find(tree, "if_not_exists") is not None)

    def _use_database(self, tree: Tree):
        return UseDatabase, dict(database=self.database(tree))

    def _show_databases(self, tree: Tree):
        return ShowDatabases, {}

    def _drop_database(self, tree: Tree):
        return DropDatabase, dict(database=self.database(tree),
                                  if_exists=self.find(tree, "if_exists") is not None,
                                  cascade=self.find(tree, "drop_cascade") is not None)

    def _target(self, tree: Tree) -> tuple[QualifiedName | None, str | None]:
        """The ``name`` or ``'string'`` right after SHOW TOPICS FROM / PRINT."""
        qname = self.find(tree, "qualified_name")
        if qname is not None:
            return self.name(qname), None
        token = next((c for c in tree.children if isinstance(c, Token) and c.type == "STRING"), None)
        if token is None:
            return None, None
        self.locations["name"] = self.position(token.start_pos)
        value = unescape_string(token.value).strip()
        if not value:
            raise self.error("the name is empty", token.start_pos, token.value)
        return None, value

    def _show_topics(self, tree: Tree):
        source, broker = self._target(tree)
        return ShowTopics, dict(source=source, broker=broker)

    def _print_topic(self, tree: Tree):
        name, topic = self._target(tree)
        broker = self.find(tree, "print_broker")
        limit = self.find(tree, "print_limit")
        count = None
        if limit is not None:
            token = limit.children[0]
            self.locations["limit"] = self.position(token.start_pos)
            if len(token.value.lstrip("0")) > 9 or int(token.value) == 0:
                raise self.error("LIMIT needs a number of records from 1 to 999999999",
                                 token.start_pos)
            count = int(token.value)
        address = None
        if broker is not None:
            token = broker.children[0]
            self.locations["broker"] = self.position(token.start_pos)
            address = unescape_string(token.value).strip()
            if not address:
                raise self.error("the broker address is empty", token.start_pos, token.value)
        return PrintTopic, dict(name=name, topic=topic, broker=address, limit=count,
                                from_beginning=self.find(tree, "print_beginning") is not None)
