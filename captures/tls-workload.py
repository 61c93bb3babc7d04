#!/usr/bin/env python3
"""Kafka over TLS from kafka-python and confluent-kafka (librdkafka), each client writing
its own NSS key log where its library can (Python's SSLContext.keylog_filename; librdkafka
2.16 has no key log setting, so its keys come from the broker side: tls-proxy.py).

    tls-workload.py BOOTSTRAP TOPIC CAFILE KEYLOG [kafka-python|librdkafka|bulk MB]

kafka-python: a producer sends 10 records (acks=all, one at a time), a consumer with the
partitions assigned reads them back. confluent-kafka: a producer sends 10 gzip records, a
consumer in group tls-group reads them all and commits. bulk (the TLS benchmark's workload,
not shipped): kafka-python produces MB megabytes of 1 KiB records (batched: linger 5 ms, 256 KiB
batches) and a consumer with the partitions assigned reads them all back.
"""
import ssl
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from confluent_kafka import Consumer, Producer

bootstrap, topic, cafile, keylog = sys.argv[1:5]


def ctx():
    c = ssl.create_default_context(cafile=cafile)
    c.keylog_filename = keylog
    return c


def kafka_python():
    p = KafkaProducer(bootstrap_servers=bootstrap, security_protocol="SSL", ssl_context=ctx(),
                      client_id="tls-kp-producer", acks="all", linger_ms=0)
    for i in range(10):
        p.send(topic, key=b"kp-%d" % i, value=b"kafka-python over tls, record %d" % i,
               partition=i % 2).get(timeout=10)
    p.close()
    c = KafkaConsumer(bootstrap_servers=bootstrap, security_protocol="SSL", ssl_context=ctx(),
                      client_id="tls-kp-consumer", enable_auto_commit=False,
                      auto_offset_reset="earliest", fetch_max_wait_ms=200)
    c.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    got, deadline = 0, time.time() + 15
    while got < 10 and time.time() < deadline:
        got += sum(len(v) for v in c.poll(timeout_ms=500).values())
    c.close()
    print(f"kafka-python read {got} records")


def librdkafka():
    conf = {"bootstrap.servers": bootstrap, "security.protocol": "SSL", "ssl.ca.location": cafile,
            "ssl.endpoint.identification.algorithm": "none"}
    p = Producer({**conf, "client.id": "tls-rdk-producer", "compression.type": "gzip",
                  "linger.ms": 0, "acks": "all"})
    for i in range(10):
        p.produce(topic, key=b"rdk-%d" % i, value=b"librdkafka over tls, record %d" % i,
                  partition=i % 2)
        p.flush(10)
    c = Consumer({**conf, "client.id": "tls-rdk-consumer", "group.id": "tls-group",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 200})
    c.subscribe([topic])
    got, deadline = 0, time.time() + 20
    while got < 20 and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got += 1
    c.commit(asynchronous=False)
    c.close()
    print(f"librdkafka read {got} records")


def bulk(mb):
    n = mb * 1024
    p = KafkaProducer(bootstrap_servers=bootstrap, security_protocol="SSL", ssl_context=ctx(),
                      client_id="tls-bulk-producer", acks=1, linger_ms=5, batch_size=256 * 1024)
    value = bytes(range(256)) * 4
    for i in range(n):
        p.send(topic, key=b"bulk-%d" % i, value=value, partition=i % 2)
    p.flush(60)
    p.close()
    c = KafkaConsumer(bootstrap_servers=bootstrap, security_protocol="SSL", ssl_context=ctx(),
                      client_id="tls-bulk-consumer", enable_auto_commit=False,
                      auto_offset_reset="earliest", fetch_max_wait_ms=200,
                      max_partition_fetch_bytes=4 << 20, fetch_max_bytes=8 << 20)
    c.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    got, deadline = 0, time.time() + 300
    while got < n and time.time() < deadline:
        got += sum(len(v) for v in c.poll(timeout_ms=500).values())
    c.close()
    print(f"bulk: produced {n} records, read {got}")


which = sys.argv[5] if len(sys.argv) > 5 else "both"
if which == "bulk":
    bulk(int(sys.argv[6]))
if which in ("kafka-python", "both"):
    kafka_python()
if which in ("librdkafka", "both"):
    librdkafka()
