"""What the admin allows (DESIGN §9, docs/security.md): one policy answers every "may
this be reached" question.

* :mod:`.policy` — :class:`~.policy.AdminPolicy`, built from the home and its engine
  properties ``streamjob.security.*``: file roots, SQL hosts and drivers, Kafka hosts,
  webhook hosts, secret directories and the environment pattern; the rules that hold for
  everyone (the home's own state and the catalog database are never a data path or a
  SQL table's database) and those that confine an operator.
* :mod:`.hosts` — host lists (names, addresses, patterns, ports).
* :mod:`.resolve` — secret references (``${env:}``, ``${file:}``) and sealed secrets
  resolved under the policy, when a connection is made.
* :mod:`.sealed` — literal secrets encrypted at rest in the catalog (Fernet, with the key
  the admin holds).

The policy applied to what statements declare and to job plans is the planner's
(:mod:`streamjob.planner.checks`): it asks each connector what its declaration reaches, so
this room, below the connectors, imports none of them.

The policy of this process is the one of the home it opened last
(:func:`active`; ``Home.open`` activates it): a process serves one home.
"""

from __future__ import annotations

from .policy import AdminPolicy, PolicyError, activate, active

__all__ = ["AdminPolicy", "PolicyError", "activate", "active"]
