"""Kafka security settings of Kafka streams and tables: SSL and SASL (PLAIN, SCRAM), passed
to every kafka-python client the stream or table makes (issue 13 point 10, DESIGN §9).

The TBLPROPERTIES use Kafka's own client setting names with the ``kafka.`` prefix of
Slipstream's Kafka properties (``"kafka.broker.list"``), and librdkafka's PEM-file names
for certificates (kafka-python, like librdkafka, reads PEM files, not Java keystores):

====================================  ==========================================  =====================
property                              meaning                                     kafka-python setting
====================================  ==========================================  =====================
``kafka.security.protocol``           PLAINTEXT (default), SSL, SASL_PLAINTEXT,   security_protocol
                                      SASL_SSL
``kafka.sasl.mechanism``              PLAIN, SCRAM-SHA-256, SCRAM-SHA-512          sasl_mechanism
``kafka.sasl.username``               the SASL user                               sasl_plain_username
``kafka.sasl.password``               its password (secret)                       sasl_plain_password
``kafka.ssl.ca.location``             CA certificate(s) to verify the broker      ssl_cafile
``kafka.ssl.certificate.location``    client certificate (mutual TLS)             ssl_certfile
``kafka.ssl.key.location``            client key                                  ssl_keyfile
``kafka.ssl.key.password``            the key's password (secret)                 ssl_password
``kafka.ssl.endpoint.identification   ``https`` (default: the broker's name must  ssl_check_hostname
.algorithm``                          match its certificate) or ``none``
====================================  ==========================================  =====================

Secrets (``kafka.sasl.password``, ``kafka.ssl.key.password``) may be written as a
reference, ``${env:NAME}`` or ``${file:/path}`` (:func:`streamjob.security.resolve.resolve`), so
that only the reference reaches the catalog; references are resolved when a client is
made, in the process that makes it (the job manager; Spark's executors for the reads).
Every secret is masked wherever a property is shown (``streamjob.properties.mask``),
and resolved values are remembered by :mod:`streamjob.sensitive` so that an error text
carrying one is masked too.

Spark's reader gets the settings as data source options (:meth:`KafkaSecurity.options`),
with references resolved by the job manager when the job starts (:meth:`resolved`):
Spark's Python workers and a cluster's executors need not share its environment or
files. The secret options' names contain "password", which Spark redacts in plans and
its UI (``spark.redaction.regex``); they live in memory only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

from streamjob.exceptions import ValidationError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

#: TBLPROPERTIES name -> field of :class:`KafkaSecurity`
PROPERTIES = {
    "kafka.security.protocol": "protocol",
    "kafka.sasl.mechanism": "mechanism",
    "kafka.sasl.username": "username",
    "kafka.sasl.password": "password",
    "kafka.ssl.ca.location": "ca_location",
    "kafka.ssl.certificate.location": "certificate_location",
    "kafka.ssl.key.location": "key_location",
    "kafka.ssl.key.password": "key_password",
    "kafka.ssl.endpoint.identification.algorithm": "endpoint_identification",
}
SECRETS = ("password", "key_password")
_NAMES = {f: p for p, f in PROPERTIES.items()}


@dataclass(frozen=True)
class KafkaSecurity:
    """How a stream's or table's Kafka clients authenticate and encrypt; the default is
    PLAINTEXT without SASL. Secret fields hold what the user wrote (a value or a
    ``${env:...}``/``${file:...}`` reference), resolved only by :meth:`client_config`."""

    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None
    ca_location: str | None = None
    certificate_location: str | None = None
    key_location: str | None = None
    key_password: str | None = None
    endpoint_identification: str = "https"

    @classmethod
    def from_properties(cls, props: Mapping[str, str], what: str) -> "KafkaSecurity":
        """The settings of lower-cased TBLPROPERTIES ``props`` of ``what`` ("Kafka stream
        's'").

        Raises:
            ValidationError: an unknown protocol or mechanism; SASL without mechanism,
                username and password; SASL settings under an SSL/PLAINTEXT protocol, or
                SSL files under PLAINTEXT/SASL_PLAINTEXT (they would be ignored silently).
        """
        values = {f: props[p].strip() for p, f in PROPERTIES.items() if props.get(p) is not None}
        sec = cls(**{k: (v.upper() if k in ("protocol", "mechanism") else v)
                     for k, v in values.items()})
        if sec.protocol not in PROTOCOLS:
            raise _error(what, "kafka.security.protocol", sec.protocol, PROTOCOLS)
        if sec.mechanism is not None and sec.mechanism not in MECHANISMS:
            raise _error(what, "kafka.sasl.mechanism", sec.mechanism, MECHANISMS)
        if sec.endpoint_identification.lower() not in ("https", "none", ""):
            raise _error(what, "kafka.ssl.endpoint.identification.algorithm",
                         sec.endpoint_identification, ("https", "none"))
        sasl = sec.protocol.startswith("SASL_")
        given = [p for p, f in PROPERTIES.items() if f in values]
        if sasl and not (sec.mechanism and sec.username and sec.password):
            missing = [p for p in ("kafka.sasl.mechanism", "kafka.sasl.username",
                                   "kafka.sasl.password") if PROPERTIES[p] not in values]
            err = ValidationError(f"{what}: \"kafka.security.protocol\"=\"{sec.protocol}\" needs "
                                  + ", ".join(f'"{m}"' for m in missing),
                                  key="kafka.security.protocol", bad_value=True)
            raise err
        stray = [p for p in given if (p.startswith("kafka.sasl.") and not sasl)
                 or (p.startswith("kafka.ssl.") and not sec.protocol.endswith("SSL"))]
        if stray:  # a contradiction, located at the first stray key (issue 28 point 5)
            err = ValidationError(
                f"{what}: {', '.join(repr(s).replace(chr(39), chr(34)) for s in stray)} "
                f"would be ignored under \"kafka.security.protocol\"=\"{sec.protocol}\" "
                f"(SASL needs SASL_PLAINTEXT or SASL_SSL, certificates SSL or SASL_SSL)",
                key=stray[0])
            raise err
        return sec

    @property
    def plaintext(self) -> bool:
        """No TLS and no SASL: kafka-python's defaults."""
        return self.protocol == "PLAINTEXT"

    def client_config(self) -> dict[str, Any]:
        """kafka-python keyword arguments (``KafkaConsumer``, ``KafkaProducer``,
        ``KafkaAdminClient`` alike), secret references resolved; ``{}`` for PLAINTEXT.

        Raises:
            ConnectorError: a reference that cannot be resolved (names it, never a value).
        """
        if self.plaintext:
            return {}
        from streamjob.security.resolve import resolve

        out: dict[str, Any] = {"security_protocol": self.protocol}
        if self.protocol.startswith("SASL_"):
            out.update(sasl_mechanism=self.mechanism, sasl_plain_username=self.username,
                       sasl_plain_password=resolve(self.password, "\"kafka.sasl.password\""))
        if self.protocol.endswith("SSL"):
            out["ssl_check_hostname"] = self.endpoint_identification.lower() == "https"
            for key, value in (("ssl_cafile", self.ca_location),
                               ("ssl_certfile", self.certificate_location),
                               ("ssl_keyfile", self.key_location)):
                if value:
                    out[key] = value
            if self.key_password:
                out["ssl_password"] = resolve(self.key_password, "\"kafka.ssl.key.password\"")
        return out

    def resolved(self) -> "KafkaSecurity":
        """These settings with secret references resolved, in this process (the job
        manager, when a job starts: Spark's Python workers and executors may not have
        its environment or files).

        Raises:
            ConnectorError: a reference that cannot be resolved (names it, never a value).
        """
        from dataclasses import replace

        from streamjob.security.resolve import resolve

        return replace(self, **{f: resolve(getattr(self, f), f"\"{_NAMES[f]}\"")
                                for f in SECRETS if getattr(self, f)})

    def explain(self, bootstrap: str) -> str:
        """A sentence on why a client with these settings may not have reached
        ``bootstrap`` (kafka-python reports only "Unable to bootstrap"): for TLS, the
        outcome of a TLS handshake with the first address made here with the same CA
        and client certificate (e.g. "certificate verify failed"); for SASL, the
        mechanism and user to check. ``""`` for PLAINTEXT."""
        if self.plaintext:
            return ""
        sasl = (f"the SASL {self.mechanism} handshake as user '{self.username}' may have "
                "been refused (check the mechanism, the user, the password and that the "
                "broker's listener speaks SASL)") if self.protocol.startswith("SASL_") else ""
        if not self.protocol.endswith("SSL"):
            return sasl
        import socket
        import ssl

        host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
        try:
            context = ssl.create_default_context(cafile=self.ca_location or None)
            context.check_hostname = self.endpoint_identification.lower() == "https"
            if self.certificate_location:
                config = self.resolved()
                context.load_cert_chain(self.certificate_location, self.key_location,
                                        config.key_password)
            with socket.create_connection((host, int(port)), timeout=5) as raw, \
                    context.wrap_socket(raw, server_hostname=host):
                pass
        except ssl.SSLCertVerificationError as exc:
            return (f"the TLS handshake with {host}:{port} failed: certificate verify failed "
                    f"({exc.verify_message}); \"kafka.ssl.ca.location\" must name the CA that "
                    "signed the broker's certificate")
        except ssl.SSLError as exc:
            return f"the TLS handshake with {host}:{port} failed: {exc.reason or exc}"
        except (OSError, ValueError) as exc:
            return f"no TLS connection to {host}:{port}: {exc}"
        return sasl or f"a TLS handshake with {host}:{port} works"

    def options(self) -> dict[str, str]:
        """Spark data source options carrying these settings (unresolved references;
        empty strings omitted); :meth:`from_options` reads them back."""
        return {f"security.{k}": v for k, v in asdict(self).items() if v}

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> "KafkaSecurity":
        """The settings from data source ``options`` (keys compared case-insensitively:
        Spark lower-cases them)."""
        low = {k.lower(): v for k, v in options.items()}
        return cls(**{f.name: low[f"security.{f.name}"] for f in fields(cls)
                      if low.get(f"security.{f.name}")})


def _error(what: str, key: str, value: str, allowed) -> ValidationError:
    return ValidationError(f"{what}: \"{key}\" must be one of {', '.join(allowed)}, got '{value}'",
                           text=value, key=key, bad_value=True)
