"""User functions of StreamSQL (issue 31, docs/functions.md): where their code comes from
(:mod:`.source`, the admin's places of :class:`~streamjob.security.policy.AdminPolicy`)
and how they load."""
