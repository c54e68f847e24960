"""The HTTP API served beside the job manager: uvicorn on a thread of ``streamjob
server`` (``--http HOST:PORT``, ``--tls-cert``/``--tls-key`` for HTTPS).

The socket is bound before the thread starts, so an address in use fails at once with
the address named, and ``--http 127.0.0.1:0`` gets a free port, reported by
:attr:`HttpService.url`.
"""

from __future__ import annotations

import logging
import socket
import threading

from ..exceptions import StreamJobError

log = logging.getLogger(__name__)


def parse_address(text: str) -> tuple[str, int]:
    """``(host, port)`` of ``HOST:PORT`` (``[::1]:8080`` for IPv6; port 0 = any free one).

    Raises:
        StreamJobError: not HOST:PORT, or the port is not 0..65535.
    """
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise StreamJobError(f"--http expects HOST:PORT (e.g. 127.0.0.1:8080), got '{text}'")
    return host, int(port)


class HttpService:
    """Serves an ASGI ``app`` on ``address`` from a daemon thread.

    Args:
        app: the ASGI app (:func:`streamjob.api.create_app`).
        address: ``HOST:PORT``.
        tls_cert, tls_key: PEM files: serve HTTPS (both or neither).

    Raises (from :meth:`start`): StreamJobError naming the address when it cannot be
    bound, or the certificate when it cannot be loaded.
    """

    def __init__(self, app, address: str, tls_cert: str | None = None,
                 tls_key: str | None = None) -> None:
        if bool(tls_cert) != bool(tls_key):
            raise StreamJobError("--tls-cert and --tls-key go together")
        self.app, self.address = app, address
        self.tls_cert, self.tls_key = tls_cert, tls_key
        self._server = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self.url: str | None = None

    def start(self) -> str:
        """Bind, start serving, and return the base URL (``http://127.0.0.1:8080``)."""
        import uvicorn

        host, port = parse_address(self.address)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            sock.close()
            raise StreamJobError(f"cannot serve HTTP on {self.address}: {exc.strerror or exc}") from None
        sock.listen(128)
        sock.set_inheritable(True)
        self._sock = sock
        config = uvicorn.Config(self.app, log_level="warning", access_log=False,
                                ssl_certfile=self.tls_cert, ssl_keyfile=self.tls_key,
                                lifespan="off", timeout_graceful_shutdown=2)
        try:
            config.load()  # loads the certificate now: a bad one is an error here
        except (OSError, ValueError) as exc:
            sock.close()
            raise StreamJobError(f"cannot load the TLS certificate {self.tls_cert}: {exc}") from None
        self._server = uvicorn.Server(config)
        server = self._server

        def serve():
            try:  # the socket listens already: requests wait in its backlog meanwhile
                server.run(sockets=[sock])
            except Exception:  # noqa: BLE001 - logged; the job manager goes on
                log.exception("the HTTP API stopped")

        self._thread = threading.Thread(target=serve, name="http-api", daemon=True)
        self._thread.start()
        bound_host, bound_port = sock.getsockname()[:2]
        shown = f"[{bound_host}]" if family == socket.AF_INET6 else bound_host
        self.url = f"{'https' if self.tls_cert else 'http'}://{shown}:{bound_port}"
        return self.url

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving (open event streams are cut) and close the socket. Idempotent."""
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
