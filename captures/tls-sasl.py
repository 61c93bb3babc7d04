#!/usr/bin/env python3
"""Kafka over SASL_SSL: SCRAM or PLAIN logins through the TLS proxy to a tansu that requires them.

    tls-sasl.py BOOTSTRAP TOPIC CAFILE KEYLOG [scram|plain]

scram (the default, d4):

kafka-python 3.0.12 (its key log through SSLContext.keylog_filename): a producer logs in as
alice with SCRAM-SHA-256 and sends 5 records (acks=all), a consumer logs in the same way and
reads them back (partitions assigned); then a producer asks for PLAIN, which the broker does
not offer (tansu 0.6.0 offers SCRAM only): refused at the SaslHandshake, no token sent.
confluent-kafka 2.16.1 (librdkafka 2.16.0; no key log of its own): a producer logs in as bob
with SCRAM-SHA-512 and sends 5 records.
plain (d5, to tansu built with PLAIN by build-tansu-plain.sh): the same clients log in with
PLAIN: kafka-python's producer (5 records) and consumer as carol, librdkafka's producer
(5 records) as dave.
The passwords are test values, made up here.
"""
import ssl
import sys
import time

from confluent_kafka import Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

bootstrap, topic, cafile, keylog = sys.argv[1:5]
mode = sys.argv[5] if len(sys.argv) > 5 else "scram"


def ctx():
    c = ssl.create_default_context(cafile=cafile)
    c.keylog_filename = keylog
    return c


def sasl(mech, user, password):
    return dict(bootstrap_servers=bootstrap, security_protocol="SASL_SSL", ssl_context=ctx(),
                sasl_mechanism=mech, sasl_plain_username=user, sasl_plain_password=password)


def python_clients(mech, user, password, tag, key):
    p = KafkaProducer(client_id=f"sasl-{tag}-producer", acks="all", linger_ms=0,
                      **sasl(mech, user, password))
    for i in range(5):
        p.send(topic, key=b"%s-%d" % (key, i), value=b"over SASL_SSL, record %d" % i,
               partition=i % 2).get(timeout=10)
    p.close()
    c = KafkaConsumer(client_id=f"sasl-{tag}-consumer", enable_auto_commit=False,
                      auto_offset_reset="earliest", fetch_max_wait_ms=200,
                      **sasl(mech, user, password))
    c.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    got, deadline = 0, time.time() + 15
    while got < 5 and time.time() < deadline:
        got += sum(len(v) for v in c.poll(timeout_ms=500).values())
    c.close()
    print(f"{mech}: read {got} records")


def librdkafka_producer(mech, user, password, tag, key):
    rdk = Producer({"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL",
                    "ssl.ca.location": cafile, "ssl.endpoint.identification.algorithm": "none",
                    "sasl.mechanisms": mech, "sasl.username": user,
                    "sasl.password": password, "client.id": f"sasl-{tag}-producer",
                    "linger.ms": 0, "acks": "all"})
    for i in range(5):
        rdk.produce(topic, key=b"%s-%d" % (key, i),
                    value=b"librdkafka over SASL_SSL, record %d" % i, partition=i % 2)
        rdk.flush(10)
    print(f"{mech}: 5 records produced")


if mode == "plain":
    python_clients("PLAIN", "carol", "carol-plain-secret", "plain-py", b"plain-py")
    librdkafka_producer("PLAIN", "dave", "dave-plain-secret", "plain-rdk", b"plain-rdk")
    sys.exit(0)

python_clients("SCRAM-SHA-256", "alice", "alice-secret", "scram256", b"s256")
try:
    KafkaProducer(client_id="sasl-plain-refused", max_block_ms=3000,
                  **sasl("PLAIN", "alice", "alice-secret"))
    print("PLAIN: accepted")
except Exception as e:  # the broker offers no PLAIN
    print(f"PLAIN: refused ({type(e).__name__})")
librdkafka_producer("SCRAM-SHA-512", "bob", "bob-secret", "scram512", b"s512")
