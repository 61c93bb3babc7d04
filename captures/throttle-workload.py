#!/usr/bin/env python3
"""Workload for captures/b4-throttle-errors-proxy.pcap (see record-b4-throttle-errors-proxy.sh).

usage: throttle-workload.py HOST:PORT TOPIC [SECONDS]

Three real clients, in threads of one process, all bootstrapped at HOST:PORT (the proxy):
- confluent-kafka Producer "b4-rdk-producer": one 100-byte record every 100 ms, acks=all,
  linger.ms=5, no idempotence;
- confluent-kafka Consumer "b4-rdk-consumer" in group b4-rdk-group, fetch.wait.max.ms=200;
- kafka-python KafkaConsumer "b4-kp-consumer" in group b4-kp-group, fetch_max_wait_ms=200.
Both consumers read TOPIC from the beginning for SECONDS (default 11) and then close.
"""
import os
import sys
import threading
import time

from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer

bootstrap, topic = sys.argv[1], sys.argv[2]
seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 11.0
t0 = time.monotonic()
counts = {}


def producer():
    p = Producer({'bootstrap.servers': bootstrap, 'client.id': 'b4-rdk-producer', 'acks': 'all',
                  'linger.ms': 5, 'enable.idempotence': False})
    n = delivered = 0
    errors = []

    def cb(err, msg):
        nonlocal delivered
        if err is None:
            delivered += 1
        else:
            errors.append(str(err))

    while time.monotonic() - t0 < seconds - 1.0:
        p.produce(topic, key=b'k%d' % (n % 4), value=os.urandom(50).hex().encode(), callback=cb)
        n += 1
        p.poll(0)
        time.sleep(0.1)
    p.flush(10)
    counts['produced'] = n
    counts['delivered'] = delivered
    counts['delivery_errors'] = errors


def rdk_consumer():
    c = Consumer({'bootstrap.servers': bootstrap, 'client.id': 'b4-rdk-consumer',
                  'group.id': 'b4-rdk-group', 'auto.offset.reset': 'earliest',
                  'fetch.wait.max.ms': 200, 'enable.auto.commit': True})
    c.subscribe([topic])
    got = 0
    while time.monotonic() - t0 < seconds:
        m = c.poll(0.1)
        if m is not None and m.error() is None:
            got += 1
    c.close()
    counts['rdk_consumed'] = got


def kp_consumer():
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, client_id='b4-kp-consumer',
                      group_id='b4-kp-group', auto_offset_reset='earliest', fetch_max_wait_ms=200)
    got = 0
    while time.monotonic() - t0 < seconds:
        for recs in c.poll(timeout_ms=100).values():
            got += len(recs)
    c.close()
    counts['kp_consumed'] = got


threads = [threading.Thread(target=f) for f in (producer, rdk_consumer, kp_consumer)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print('workload:', counts, flush=True)
