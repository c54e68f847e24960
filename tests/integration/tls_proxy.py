"""A TLS-terminating TCP proxy for tests: clients speak TLS to ``127.0.0.1:port``, the
proxy forwards the plaintext bytes to ``target`` (a broker that speaks neither TLS nor
SASL, as the broker of TESTING.md). Started with a broker whose advertised address is the
proxy's, Kafka clients then reach every broker connection through TLS only."""

from __future__ import annotations

import socket
import ssl
import threading


class TlsProxy:
    """Listen on a free port of 127.0.0.1 with ``cert_pem``/``key_pem`` (file paths);
    ``port`` is where; ``close()`` stops accepting and closes every connection."""

    def __init__(self, target: tuple[str, int], cert_pem: str, key_pem: str) -> None:
        self.target = target
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(cert_pem, key_pem)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.handshakes = 0  # TLS handshakes completed: proof that clients used TLS
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, name="tls-proxy", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            tls = self.context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()  # a client that does not speak TLS, or does not trust us
            return
        self.handshakes += 1
        try:
            upstream = socket.create_connection(self.target)
        except OSError:
            tls.close()
            return
        self._sockets += [tls, upstream]
        threading.Thread(target=self._pump, args=(upstream, tls), daemon=True).start()
        self._pump(tls, upstream)

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._closed = True
        self.listener.close()
        for s in self._sockets:
            try:
                s.close()
            except OSError:
                pass
