#!/usr/bin/env python3
"""Very large records: Kafka PDUs that span dozens of TCP segments (loopback segments are up to
65483 bytes), and one record that is small on the wire but 5 MB once decompressed.
  - confluent-kafka (librdkafka 2.16) producer, message.max.bytes=8000000: one 2,000,000-byte
    record of random bytes (uncompressed), then a 5,000,000-byte text record with zstd;
  - kafka-python 3.0 producer, max_request_size=3000000: one 1,200,000-byte random record,
    uncompressed;
  - confluent-kafka consumer (fetch.max.bytes / max.partition.fetch.bytes 8,000,000) assign()s
    partition 0 from offset 0 and fetches the three records back.
usage: large-messages.py BOOTSTRAP   (topic large with 1 partition must exist)"""
import hashlib
import os
import sys
import time

import kafka
from confluent_kafka import Consumer, Producer, TopicPartition, libversion, version
from kafka import KafkaProducer

BOOT = sys.argv[1] if len(sys.argv) > 1 else '127.0.0.1:9092'
TOPIC = 'large'
print('confluent-kafka', version(), 'librdkafka', libversion(), 'kafka-python', kafka.__version__)

sizes = {}
p = Producer({'bootstrap.servers': BOOT, 'client.id': 'large-rdk', 'linger.ms': 0, 'acks': 'all',
              'message.max.bytes': 8000000, 'batch.size': 8000000})
blob = os.urandom(2000000)
sizes[b'rdk-random-2MB'] = hashlib.sha256(blob).hexdigest()
p.produce(TOPIC, key=b'rdk-random-2MB', value=blob, partition=0,
          headers=[('content-length', str(len(blob)).encode()), ('sha256', sizes[b'rdk-random-2MB'].encode())])
print('rdk random unflushed', p.flush(20))
pz = Producer({'bootstrap.servers': BOOT, 'client.id': 'large-rdk-zstd', 'linger.ms': 0, 'acks': 'all',
               'compression.type': 'zstd', 'message.max.bytes': 8000000, 'batch.size': 8000000})
line = b'2026-11-29T12:00:00.000Z INFO  kafkashark.capture large-message test line %07d status=ok\n'
text = b''.join(line % i for i in range(60000))[:5000000]
sizes[b'rdk-zstd-text-5MB'] = hashlib.sha256(text).hexdigest()
pz.produce(TOPIC, key=b'rdk-zstd-text-5MB', value=text, partition=0,
           headers=[('content-length', str(len(text)).encode())])
print('rdk zstd unflushed', pz.flush(20))

kp = KafkaProducer(bootstrap_servers=BOOT, client_id='large-kp', acks=1, max_request_size=3000000,
                   batch_size=3000000, linger_ms=0)
blob2 = os.urandom(1200000)
sizes[b'kp-random-1.2MB'] = hashlib.sha256(blob2).hexdigest()
kp.send(TOPIC, key=b'kp-random-1.2MB', value=blob2, partition=0,
        headers=[('content-length', str(len(blob2)).encode())]).get(timeout=20)
kp.flush()
kp.close()

c = Consumer({'bootstrap.servers': BOOT, 'client.id': 'large-reader', 'group.id': 'large-reader',
              'enable.auto.commit': False, 'auto.offset.reset': 'earliest',
              'fetch.max.bytes': 8000000, 'max.partition.fetch.bytes': 8000000,
              'receive.message.max.bytes': 10000000})
c.assign([TopicPartition(TOPIC, 0, 0)])
got = 0
deadline = time.time() + 30
while got < 3 and time.time() < deadline:
    m = c.poll(0.5)
    if m is None:
        continue
    if m.error():
        print('consumer error', m.error())
        continue
    got += 1
    ok = hashlib.sha256(m.value()).hexdigest() == sizes.get(m.key())
    print('consumed', m.key(), len(m.value()), 'sha256 ok' if ok else 'sha256 MISMATCH')
print('consumed', got)
c.close()
