#!/usr/bin/env python3
"""Kafka over SASL_SSL: SCRAM logins through the TLS proxy to a tansu that requires them.

    tls-sasl.py BOOTSTRAP TOPIC CAFILE KEYLOG

kafka-python 3.0.12 (its key log through SSLContext.keylog_filename): a producer logs in as
alice with SCRAM-SHA-256 and sends 5 records (acks=all), a consumer logs in the same way and
reads them back (partitions assigned); then a producer asks for PLAIN, which the broker does
not offer (tansu 0.6.0 offers SCRAM only): refused at the SaslHandshake, no token sent.
confluent-kafka 2.16.1 (librdkafka 2.16.0; no key log of its own): a producer logs in as bob
with SCRAM-SHA-512 and sends 5 records. The passwords are test values, made up here.
"""
import ssl
import sys
import time

from confluent_kafka import Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

bootstrap, topic, cafile, keylog = sys.argv[1:5]


def ctx():
    c = ssl.create_default_context(cafile=cafile)
    c.keylog_filename = keylog
    return c


def sasl(mech, user, password):
    return dict(bootstrap_servers=bootstrap, security_protocol="SASL_SSL", ssl_context=ctx(),
                sasl_mechanism=mech, sasl_plain_username=user, sasl_plain_password=password)


p = KafkaProducer(client_id="sasl-scram256-producer", acks="all", linger_ms=0,
                  **sasl("SCRAM-SHA-256", "alice", "alice-secret"))
for i in range(5):
    p.send(topic, key=b"s256-%d" % i, value=b"over SASL_SSL, record %d" % i, partition=i % 2).get(timeout=10)
p.close()
c = KafkaConsumer(client_id="sasl-scram256-consumer", enable_auto_commit=False,
                  auto_offset_reset="earliest", fetch_max_wait_ms=200,
                  **sasl("SCRAM-SHA-256", "alice", "alice-secret"))
c.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
got, deadline = 0, time.time() + 15
while got < 5 and time.time() < deadline:
    got += sum(len(v) for v in c.poll(timeout_ms=500).values())
c.close()
print(f"SCRAM-SHA-256: read {got} records")

try:
    KafkaProducer(client_id="sasl-plain-refused", max_block_ms=3000,
                  **sasl("PLAIN", "alice", "alice-secret"))
    print("PLAIN: accepted")
except Exception as e:  # the broker offers no PLAIN
    print(f"PLAIN: refused ({type(e).__name__})")

rdk = Producer({"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL",
                "ssl.ca.location": cafile, "ssl.endpoint.identification.algorithm": "none",
                "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "bob",
                "sasl.password": "bob-secret", "client.id": "sasl-scram512-producer",
                "linger.ms": 0, "acks": "all"})
for i in range(5):
    rdk.produce(topic, key=b"s512-%d" % i, value=b"librdkafka over SASL_SSL, record %d" % i,
                partition=i % 2)
    rdk.flush(10)
print("SCRAM-SHA-512: 5 records produced")
