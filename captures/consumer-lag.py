#!/usr/bin/env python3
"""A producer writing steadily to a 3-partition topic while two consumer groups read it:
one that keeps up and one that falls behind, so the capture holds consumer lag that grows,
long-poll Fetches that wait out their MaxWaitMs, and the same batches produced and fetched.

- lag-producer (confluent-kafka / librdkafka): 50 records a second for 20 s, keyed over
  the 3 partitions, linger.ms 100, CreateTime timestamps.
- fast-group (kafka-python, one member): keeps up; fetch_max_wait_ms 500, so once the
  producer stops its Fetches come back empty after about 500 ms (long-polls). Commits
  automatically every second.
- slow-group (confluent-kafka, one member): handles 8 records a second with a tiny fetch
  queue (queued.max.messages.kbytes 1, max.partition.fetch.bytes 256), so the offsets it
  fetches fall further behind the high watermark; commits every 10 records.
The consumers run 8 s past the producer's end.
usage: consumer-lag.py BOOTSTRAP   (topic lag-topic with 3 partitions must exist)"""
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, libversion, version
from kafka import KafkaConsumer

BOOT = sys.argv[1] if len(sys.argv) > 1 else '127.0.0.1:9092'
TOPIC = 'lag-topic'
PRODUCE_S = 20
RATE = 50
TAIL_S = 8
print('confluent-kafka', version(), 'librdkafka', libversion())
stop = threading.Event()
counts = {}


def produce():
    p = Producer({'bootstrap.servers': BOOT, 'client.id': 'lag-producer', 'linger.ms': 100,
                  'acks': 'all'})
    start = time.time()
    n = 0
    while time.time() - start < PRODUCE_S:
        p.produce(TOPIC, key='key-%d' % (n % 12), value='record %06d produced at %.3f' % (n, time.time()))
        p.poll(0)
        n += 1
        time.sleep(max(0.0, start + n / RATE - time.time()))
    p.flush(10)
    counts['produced'] = n


def fast():
    c = KafkaConsumer(TOPIC, bootstrap_servers=BOOT, client_id='fast-consumer', group_id='fast-group',
                      auto_offset_reset='earliest', fetch_max_wait_ms=500,
                      enable_auto_commit=True, auto_commit_interval_ms=1000)
    got = 0
    while not stop.is_set():
        for recs in c.poll(timeout_ms=200).values():
            got += len(recs)
    c.close()
    counts['fast'] = got


def slow():
    c = Consumer({'bootstrap.servers': BOOT, 'client.id': 'slow-consumer', 'group.id': 'slow-group',
                  'auto.offset.reset': 'earliest', 'enable.auto.commit': False,
                  'queued.max.messages.kbytes': 1, 'queued.min.messages': 1,
                  'max.partition.fetch.bytes': 256, 'fetch.max.bytes': 1024, 'message.max.bytes': 1000,
                  'fetch.wait.max.ms': 500})
    c.subscribe([TOPIC])
    got = 0
    while not stop.is_set():
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        got += 1
        time.sleep(1 / 8)
        if got % 10 == 0:
            c.commit(asynchronous=False)
    c.close()
    counts['slow'] = got


threads = [threading.Thread(target=f) for f in (fast, slow)]
for t in threads:
    t.start()
time.sleep(2)
produce()
time.sleep(TAIL_S)
stop.set()
for t in threads:
    t.join()
print(counts)
