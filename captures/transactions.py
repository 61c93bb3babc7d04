#!/usr/bin/env python3
"""confluent-kafka (librdkafka) transactional producers on a 2-partition topic, then a
read_committed and a read_uncommitted consumer that fetch everything back, so the Fetch
responses carry control batches (transaction markers) beside the transactional data.

tansu 0.6.0 does not list EndTxn in its ApiVersions, so librdkafka refuses to commit or
abort; but tansu aborts a transaction left open when the same transactional.id calls
InitProducerId again, writing an ABORT control batch (key ControlRecordType, value
EndTxnMarker) to each partition the transaction wrote. So: three producers in turn with
one transactional.id, the first two leaving a transaction open; the second and third
InitProducerId each abort the one before.
usage: transactions.py BOOTSTRAP   (topic tx-topic with 2 partitions must exist)"""
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition, libversion, version

BOOT = sys.argv[1] if len(sys.argv) > 1 else '127.0.0.1:9092'
TOPIC = 'tx-topic'
print('confluent-kafka', version(), 'librdkafka', libversion())

for round_ in range(3):
    p = Producer({'bootstrap.servers': BOOT, 'client.id': 'tx-producer-%d' % round_,
                  'transactional.id': 'tx-demo', 'enable.idempotence': True,
                  'linger.ms': 20, 'acks': 'all'})
    p.init_transactions(15)
    print('producer', round_, 'initialised')
    if round_ < 2:
        p.begin_transaction()
        for i in range(4):
            p.produce(TOPIC, key='k%d' % i, value='round %d record %d' % (round_, i),
                      partition=i % 2)
        print('producer', round_, 'unflushed', p.flush(15), '(transaction left open)')
    del p
    time.sleep(0.5)

for isolation in ('read_committed', 'read_uncommitted'):
    c = Consumer({'bootstrap.servers': BOOT, 'client.id': 'tx-' + isolation,
                  'group.id': 'tx-' + isolation, 'enable.auto.commit': False,
                  'auto.offset.reset': 'earliest', 'isolation.level': isolation})
    c.assign([TopicPartition(TOPIC, part, 0) for part in range(2)])
    got = 0
    deadline = time.time() + 6
    while time.time() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        got += 1
    print(isolation, 'consumed', got)
    c.close()
