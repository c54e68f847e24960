"""The builder methods of the Delta table maintenance statements (issue 32;
docs/connectors.md "Delta Lake"), mixed into :class:`~streamjob.grammar.transform.Builder`
(kept apart, like their grammar rules): ``OPTIMIZE [TABLE] t [ZORDER BY (c, ...)]`` and
``VACUUM [TABLE] t [RETAIN n HOURS] [DRY RUN]``, Delta Lake's own SQL spelling."""

from __future__ import annotations

from lark import Tree

from streamjob.grammar.lexical import ident_value
from streamjob.grammar.statements import OptimizeTable, VacuumTable

__all__ = ["MaintenanceBuilder"]

#: The longest retention VACUUM accepts, in hours (100 years: more is a typo, and it
#: keeps the number a plain integer everywhere).
MAX_RETAIN_HOURS = 876_000


class MaintenanceBuilder:
    """Builder methods (``_<rule>``) of OPTIMIZE and VACUUM; uses the Builder's ``name``,
    ``find``, ``position``, ``error`` and ``locations``."""

    def _optimize_table(self, tree: Tree):
        name = self.name(self.find(tree, "qualified_name"))
        columns: list[str] = []
        found = self.find(tree, "zorder_by")
        if found is not None:
            self.locations["zorder_by"] = self.position(found.meta.start_pos) \
                if not found.meta.empty else self.locations["name"]
            for ident in found.children:
                token = ident.children[0]
                value = ident_value(token).lower()
                if value in columns:
                    raise self.error(f"column '{value}' is named twice in ZORDER BY; name it "
                                     "once", token.start_pos)
                self.locations[f"column:{value}"] = self.position(token.start_pos)
                columns.append(value)
        return OptimizeTable, dict(name=name, zorder_by=tuple(columns))

    def _vacuum_table(self, tree: Tree):
        name = self.name(self.find(tree, "qualified_name"))
        hours = None
        found = self.find(tree, "vacuum_retain")
        if found is not None:
            token = found.children[0]
            self.locations["retain"] = self.position(token.start_pos)
            if len(token.value.lstrip("0")) > 7 or int(token.value) > MAX_RETAIN_HOURS:
                raise self.error(f"RETAIN takes a number of hours from 0 to {MAX_RETAIN_HOURS}",
                                 token.start_pos)
            hours = int(token.value)
        return VacuumTable, dict(name=name, retain_hours=hours,
                                 dry_run=self.find(tree, "vacuum_dry_run") is not None)
