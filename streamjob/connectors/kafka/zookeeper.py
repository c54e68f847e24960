"""Kafka brokers found through ZooKeeper, for old Slipstream scripts that give only
``"kafka.zookeeper"`` (issue 18).

Kafka (before KRaft) registers each live broker as the ephemeral znode
``/brokers/ids/<id>`` under the cluster's ZooKeeper chroot, its data JSON such as::

    {"listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
     "endpoints": ["PLAINTEXT://host:9092"], "host": "host", "port": 9092, "version": 4}

(Kafka's ``BrokerRegistration``/``BrokerInfo``; version 1 registrations carry only
``host`` and ``port``, a PLAINTEXT listener). :func:`brokers_from_zookeeper` reads them
and returns a bootstrap list: the endpoints whose listener uses the stream's
``kafka.security.protocol``. ``"kafka.zookeeper"`` is ``host:port[,host:port...][/chroot]``
as Kafka's ``zookeeper.connect``.
"""

from __future__ import annotations

import json
import logging

from ...exceptions import ValidationError

BROKERS_PATH = "/brokers/ids"
CONNECT_TIMEOUT_S = 10.0
"""Longest wait (s) to reach ZooKeeper (the bound Kafka clients use to connect)."""


def brokers_from_zookeeper(quorum: str, protocol: str = "PLAINTEXT", what: str = "Kafka stream",
                           timeout_s: float = CONNECT_TIMEOUT_S) -> str:
    """The ``host:port,...`` of the live brokers registered in ZooKeeper ``quorum``
    (``"kafka.zookeeper"``) with a listener of security ``protocol``, sorted by broker id.

    Raises:
        ValidationError: ZooKeeper cannot be reached within ``timeout_s`` (names the
            address), it lists no broker under ``/brokers/ids`` (or none with such a
            listener); the message says to give ``"kafka.broker.list"`` instead.
    """
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoNodeError
    from kazoo.handlers.threading import KazooTimeoutError

    fix = "give the brokers as \"kafka.broker.list\"=\"host:port,...\""
    zk = KazooClient(hosts=quorum, timeout=timeout_s, connection_retry={"max_tries": 0},
                     command_retry={"max_tries": 2, "delay": 0.1},
                     logger=logging.getLogger("kazoo.client"))
    try:
        try:
            zk.start(timeout=timeout_s)
        except Exception as exc:  # noqa: BLE001 - kazoo timeout or a bad host string
            reason = ("no answer" if isinstance(exc, KazooTimeoutError)
                      else str(exc) or type(exc).__name__)
            raise ValidationError(
                f"{what}: no \"kafka.broker.list\", and the brokers cannot be found through "
                f"\"kafka.zookeeper\": ZooKeeper at {quorum} cannot be reached ({reason} "
                f"within {timeout_s:g} s); {fix}") from None
        try:
            ids = zk.get_children(BROKERS_PATH)
        except NoNodeError:
            ids = []
        found = []
        for broker_id in sorted(ids, key=lambda i: (not i.isdigit(), int(i) if i.isdigit() else 0, i)):
            try:
                data, _ = zk.get(f"{BROKERS_PATH}/{broker_id}")
            except NoNodeError:  # the broker went away meanwhile
                continue
            found += endpoints(data, protocol)
    finally:
        zk.stop()
        zk.close()
    if not found:
        listed = f"no broker with a {protocol} listener" if ids else "no broker"
        raise ValidationError(
            f"{what}: no \"kafka.broker.list\", and ZooKeeper at {quorum} lists {listed} "
            f"under {BROKERS_PATH} (is Kafka registered in this ZooKeeper, under this "
            f"chroot?); {fix}")
    return ",".join(dict.fromkeys(found))


def endpoints(data: bytes, protocol: str = "PLAINTEXT") -> list[str]:
    """``host:port`` of a broker registration's (``/brokers/ids/<id>`` data, JSON)
    listeners using security ``protocol``; a registration without ``endpoints`` gives
    its ``host``/``port`` for PLAINTEXT. Unreadable data gives none."""
    try:
        reg = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, AttributeError):
        return []
    if not isinstance(reg, dict):
        return []
    protocols = reg.get("listener_security_protocol_map") or {}
    out = []
    for ep in reg.get("endpoints") or []:
        listener, sep, address = str(ep).partition("://")
        if sep and protocols.get(listener, listener).upper() == protocol.upper() and address:
            out.append(address)
    if not reg.get("endpoints") and reg.get("host") and reg.get("port") \
            and protocol.upper() == "PLAINTEXT":
        out.append(f"{reg['host']}:{reg['port']}")
    return out
