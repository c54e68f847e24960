"""``streamjob token create|list|revoke``: the HTTP API's bearer tokens (issue 15).

These verbs work on the catalog directly (they need its credentials, as the person who
runs the server has them); a token is printed once, at ``create``, and only its hash is
kept (:mod:`streamjob.catalog.access`).
"""

from __future__ import annotations

import click

from .app import client_options
from .context import Invocation


@click.group("token")
def token() -> None:
    """Bearer tokens of the HTTP API (`streamjob server --http`).

    Every request to the API needs a valid token: a viewer reads declared objects, an
    operator also submits, starts, stops and drops within what the admin allowed, an
    admin acts as the admin. Revoking a token (even the last one) never opens the API;
    `streamjob server --http` creates an admin token when the catalog holds none.
    """


@token.command("create")
@click.argument("name")
@click.option("--role", type=click.Choice(["viewer", "operator", "admin"]), required=True,
              help="viewer: read declared objects; operator: also change, within what "
                   "the admin allowed; admin: everything a local admin may.")
@client_options
@click.pass_obj
def create(obj: Invocation, name: str, role: str) -> None:
    """Create token NAME and print it (once: only its hash is kept)."""
    from ..api.auth import new_token

    value = new_token()
    obj.catalog.create_token(name, role, value)
    click.echo(value)
    click.echo(f"token {name} ({role}) created: it is shown only now; send it as "
               "'Authorization: Bearer <token>' or with --token", err=True)


@token.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (a list of tokens).")
@client_options
@click.pass_obj
def list_tokens(obj: Invocation, as_json: bool) -> None:
    """List the tokens: name, role, created, last used (never the tokens)."""
    from ..executor.result import Result
    from ..client.render import render

    rows = [(t.name, t.role, t.created_at.isoformat(timespec="seconds"),
             t.last_used_at.isoformat(timespec="seconds") if t.last_used_at else None)
            for t in obj.catalog.list_tokens()]
    render(Result(columns=("name", "role", "created", "last used"), rows=rows,
                  title="tokens", message=None if rows else (
                      "no tokens: the HTTP API lets no one in; `streamjob server --http` "
                      "creates an admin token at its start")),
           as_json or obj.json)


@token.command("revoke")
@click.argument("name")
@client_options
@click.pass_obj
def revoke(obj: Invocation, name: str) -> None:
    """Revoke token NAME: requests carrying it get 401 from now on, and its open event
    streams end within a second. Revoking the last token leaves the API closed."""
    info = obj.catalog.revoke_token(name)
    click.echo(f"token {info.name} ({info.role}) revoked")
