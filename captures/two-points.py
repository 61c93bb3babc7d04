#!/usr/bin/env python3
"""confluent-kafka (librdkafka) workload for record-e1-two-points.sh: a producer
writing keyed records for a few seconds (gzip, linger 5 ms) while a consumer group
reads them and commits, then both close.
usage: two-points.py BOOTSTRAP   (topic two-points with 2 partitions must exist)"""
import sys
import time

from confluent_kafka import Consumer, Producer, libversion, version

BOOT = sys.argv[1] if len(sys.argv) > 1 else '127.0.0.1:9092'
print('confluent-kafka', version(), 'librdkafka', libversion())
p = Producer({'bootstrap.servers': BOOT, 'client.id': 'two-points-producer',
              'compression.type': 'gzip', 'linger.ms': 5})
c = Consumer({'bootstrap.servers': BOOT, 'client.id': 'two-points-consumer',
              'group.id': 'two-points-group', 'auto.offset.reset': 'earliest',
              'enable.auto.commit': False})
c.subscribe(['two-points'])
sent = got = 0
end = time.time() + 6
while time.time() < end:
    p.produce('two-points', key='k-%d' % (sent % 5), value='{"n": %d}' % sent)
    sent += 1
    p.poll(0)
    m = c.poll(0.2)
    if m is not None and not m.error():
        got += 1
        if got % 5 == 0:
            c.commit(asynchronous=False)
print('unflushed', p.flush(15))
deadline = time.time() + 10
while got < sent and time.time() < deadline:
    m = c.poll(0.5)
    if m is not None and not m.error():
        got += 1
c.commit(asynchronous=False)
c.close()
print('sent', sent, 'consumed', got)
