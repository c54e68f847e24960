"""Kafka SSL/SASL settings (issue 13 point 10): validation, kafka-python settings, secret
references resolved only on demand, and masking wherever properties are shown."""

from __future__ import annotations

import pytest

from streamjob import properties as jp
from streamjob.connectors import spec as cspec
from streamjob.connectors.kafka.security import KafkaSecurity
from streamjob.exceptions import ConnectorError, ValidationError

pytestmark = pytest.mark.unit

BASE = {"topic": "t", "kafka.broker.list": "b:9092"}


def _spec(**props):
    return cspec.source_spec("s", {**BASE, **props}, None)


def test_plaintext_is_the_default_and_adds_nothing():
    assert _spec().security == KafkaSecurity() and KafkaSecurity().client_config() == {}


def test_sasl_ssl_maps_to_kafka_python_settings_with_references_resolved(monkeypatch, tmp_path):
    from streamjob.home import Home

    monkeypatch.setenv("STREAMJOB_SECRET_SJ_PW", "pa/ss @word")  # the admin's pattern
    key_pw = Home.open(tmp_path / "home", {}).root / "secrets" / "key.pw"  # the secret dir
    key_pw.write_text("k3y\n")
    sec = _spec(**{"kafka.security.protocol": "sasl_ssl", "kafka.sasl.mechanism": "scram-sha-512",
                   "kafka.sasl.username": "etl", "kafka.sasl.password": "${env:STREAMJOB_SECRET_SJ_PW}",
                   "kafka.ssl.ca.location": "/ca.pem", "kafka.ssl.key.password": f"${{file:{key_pw}}}",
                   "kafka.ssl.endpoint.identification.algorithm": "none"}).security
    assert sec.password == "${env:STREAMJOB_SECRET_SJ_PW}"  # kept as written (what the catalog holds)
    assert sec.client_config() == {
        "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "etl", "sasl_plain_password": "pa/ss @word",
        "ssl_check_hostname": False, "ssl_cafile": "/ca.pem", "ssl_password": "k3y"}
    assert KafkaSecurity.from_options(sec.options()) == sec  # through Spark's options
    assert KafkaSecurity.from_options({k.lower(): v for k, v in sec.options().items()}) == sec
    assert sec.resolved().password == "pa/ss @word"


@pytest.mark.parametrize("props, words", [
    ({"kafka.security.protocol": "TLS"}, "must be one of PLAINTEXT, SSL"),
    ({"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.username": "u"},
     '"kafka.sasl.mechanism", "kafka.sasl.password"'),
    ({"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "GSSAPI",
      "kafka.sasl.username": "u", "kafka.sasl.password": "p"}, "PLAIN, SCRAM-SHA-256"),
    ({"kafka.sasl.username": "u"}, "would be ignored under \"kafka.security.protocol\"=\"PLAINTEXT\""),
    ({"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN",
      "kafka.sasl.username": "u", "kafka.sasl.password": "p", "kafka.ssl.ca.location": "/ca"},
     "certificates SSL or SASL_SSL"),
])
def test_contradictory_or_incomplete_settings_are_refused(props, words):
    with pytest.raises(ValidationError, match="Kafka stream 's'") as info:
        _spec(**props)
    assert words in info.value.message


def test_kafka_tables_take_the_same_settings():
    table = cspec.table_spec("t", {**BASE, "kafka.security.protocol": "SSL",
                                   "kafka.ssl.ca.location": "/ca.pem"}, None, None, "/w")
    assert table.security.client_config()["ssl_cafile"] == "/ca.pem"


def test_an_unset_reference_names_itself_never_a_value(monkeypatch):
    monkeypatch.delenv("STREAMJOB_SECRET_MISSING", raising=False)
    sec = KafkaSecurity("SASL_PLAINTEXT", "PLAIN", "u", "${env:STREAMJOB_SECRET_MISSING}")
    with pytest.raises(ConnectorError, match=r"\$\{env:STREAMJOB_SECRET_MISSING\} in \"kafka.sasl.password\""):
        sec.client_config()


def test_secrets_are_masked_in_property_display():
    assert jp.mask("kafka.sasl.password", "plain-text-secret") == "******"
    assert jp.mask("kafka.ssl.key.password", "${env:X}") == "******"
    assert jp.mask("kafka.sasl.username", "etl") == "etl"
