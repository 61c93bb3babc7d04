#!/usr/bin/env python3
"""Two client libraries against one broker on a non-default port:
  - confluent-kafka (librdkafka 2.16) AdminClient creates topics mixed-events (2 partitions)
    and mixed-scratch (1 partition);
  - one consumer group, mixed-group, with one member of each library (two threads; the
    librdkafka member joins first, the kafka-python member a second later, so the group
    rebalances to one partition each);
  - confluent-kafka Producer sends 20 keyed records with a header, zstd;
  - kafka-python KafkaProducer sends 20 keyed records with a header, gzip
    (the kafka-python consumer needs the `zstandard` module to read librdkafka's zstd batches:
    pip install zstandard);
  - the two members read the 40 records (20 each) and commit, then leave the group;
  - kafka-python KafkaAdminClient deletes mixed-scratch; confluent-kafka lists topics.
usage: mixed-clients.py BOOTSTRAP   (e.g. 127.0.0.1:19092)"""
import sys
import threading
import time

import kafka
import zstandard  # noqa: F401  (kafka-python's zstd codec; fail early if missing)
from confluent_kafka import Consumer, Producer, libversion, version
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient
from kafka.coordinator.assignors.range import RangePartitionAssignor

BOOT = sys.argv[1] if len(sys.argv) > 1 else '127.0.0.1:19092'
TOPIC = 'mixed-events'
PER_CLIENT = 20
print('confluent-kafka', version(), 'librdkafka', libversion(), 'kafka-python', kafka.__version__)

# 1. admin: create two topics (confluent-kafka)
ca = AdminClient({'bootstrap.servers': BOOT, 'client.id': 'mixed-admin-rdk'})
for t, f in ca.create_topics([NewTopic(TOPIC, 2, 1), NewTopic('mixed-scratch', 1, 1)],
                             operation_timeout=10).items():
    try:
        f.result(10)
        print('created', t)
    except Exception as e:  # noqa: BLE001
        print('create', t, 'failed:', e)
time.sleep(0.5)

# 2. one consumer group, one member from each library, in two threads. Both members join
#    (and the group rebalances to one partition each) before anything is produced.
total = PER_CLIENT * 2
got = {'rdk': 0, 'kp': 0}
assigned = {'rdk': threading.Event(), 'kp': threading.Event()}
both_in = threading.Event()
deadline = time.time() + 60


def rdk_member():
    c = Consumer({'bootstrap.servers': BOOT, 'client.id': 'mixed-rdk-consumer', 'group.id': 'mixed-group',
                  'auto.offset.reset': 'earliest', 'enable.auto.commit': False,
                  'partition.assignment.strategy': 'range', 'session.timeout.ms': 10000,
                  'heartbeat.interval.ms': 1000})
    c.subscribe([TOPIC])
    pending = 0
    while time.time() < deadline:
        m = c.poll(0.3)
        if len(c.assignment()) == 1:
            assigned['rdk'].set()
        if m is not None and not m.error():
            got['rdk'] += 1
            pending += 1
        elif pending:
            c.commit(asynchronous=False)  # OffsetCommit once a burst has been read
            pending = 0
        if sum(got.values()) >= total and not pending:
            break
    c.close()  # LeaveGroup


def kp_member():
    c = KafkaConsumer(bootstrap_servers=BOOT, client_id='mixed-kp-consumer', group_id='mixed-group',
                      auto_offset_reset='earliest', enable_auto_commit=False,
                      partition_assignment_strategy=[RangePartitionAssignor],
                      session_timeout_ms=10000, heartbeat_interval_ms=1000)
    c.subscribe([TOPIC])
    while time.time() < deadline:
        recs = c.poll(timeout_ms=300)
        if len(c.assignment()) == 1:
            assigned['kp'].set()
        n = sum(len(v) for v in recs.values())
        if n:
            got['kp'] += n
            c.commit()
        if sum(got.values()) >= total:
            break
    c.close()  # LeaveGroup


threads = [threading.Thread(target=rdk_member), threading.Thread(target=kp_member)]
for t in threads:
    t.start()
    time.sleep(1.0)
for k, e in assigned.items():
    print(k, 'has one partition:', e.wait(30))

# 3. produce: librdkafka with zstd, kafka-python with gzip; alternate partitions
p = Producer({'bootstrap.servers': BOOT, 'client.id': 'mixed-rdk-producer',
              'compression.type': 'zstd', 'linger.ms': 50, 'acks': 'all'})
for i in range(PER_CLIENT):
    p.produce(TOPIC, key=b'rdk-%d' % (i % 4), partition=i % 2,
              value=b'{"from":"librdkafka","seq":%d,"pad":"%s"}' % (i, b'z' * 64),
              headers=[('client', b'confluent-kafka')])
print('rdk unflushed', p.flush(15))

kp = KafkaProducer(bootstrap_servers=BOOT, client_id='mixed-kp-producer',
                   compression_type='gzip', linger_ms=50, acks='all')
for i in range(PER_CLIENT):
    kp.send(TOPIC, key=b'kp-%d' % (i % 4), partition=i % 2,
            value=b'{"from":"kafka-python","seq":%d,"pad":"%s"}' % (i, b'g' * 64),
            headers=[('client', b'kafka-python')])
kp.flush()
kp.close()
print('kafka-python produced', PER_CLIENT)
for t in threads:
    t.join()
print('consumed', got)

# 4. admin: delete the scratch topic (kafka-python), list topics (confluent-kafka)
ka = KafkaAdminClient(bootstrap_servers=BOOT, client_id='mixed-admin-kp')
try:
    print('delete_topics', ka.delete_topics(['mixed-scratch']))
except Exception as e:  # noqa: BLE001
    print('delete_topics failed:', type(e).__name__, e)
ka.close()
time.sleep(0.3)
print('topics now', sorted(ca.list_topics(timeout=10).topics))
