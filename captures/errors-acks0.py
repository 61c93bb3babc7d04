#!/usr/bin/env python3
"""Requests the broker answers with errors, and acks=0 Produce requests (which get no
response at all).

kafka-python 3.0 (KafkaAdminClient and hand-built requests sent on its connection, with
versions negotiated from ApiVersions as usual):
  - CreateTopics err-topic (1 partition), then CreateTopics err-topic again (TOPIC_ALREADY_EXISTS);
  - Metadata for a topic that does not exist;
  - Produce (acks=1) to a topic that does not exist, and to partition 7 of err-topic;
  - Fetch (v12, by topic name) for a topic that does not exist and for partition 7 of err-topic;
  - Fetch (newest version, by topic id) with a made-up topic id;
  - ListOffsets for a topic that does not exist and for partition 9 of err-topic;
  - DeleteTopics for a topic that does not exist;
  - Heartbeat / OffsetCommit / SyncGroup / LeaveGroup for a group and member that do not exist;
  - a hand-built Produce with acks=0 to a topic that does not exist (the error is never sent).
Then a consumer group err-group (kafka-python KafkaConsumer), whose first JoinGroup is
answered MEMBER_ID_REQUIRED, and a confluent-kafka consumer in group err-group-rdk (same).
acks=0 producers: confluent-kafka (librdkafka 2.16) acks=0 10 records, kafka-python acks=0
10 records, both to err-topic; the consumers above read them back.
usage: errors-acks0.py BOOTSTRAP"""
import sys
import time
import uuid

import kafka
from confluent_kafka import Consumer, Producer, TopicPartition as CTP, libversion, version
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.consumer import (FetchRequest, HeartbeatRequest, LeaveGroupRequest,
                                     ListOffsetsRequest, OffsetCommitRequest, SyncGroupRequest)
from kafka.protocol.producer import ProduceRequest
from kafka.record.memory_records import MemoryRecordsBuilder

BOOT = sys.argv[1] if len(sys.argv) > 1 else '127.0.0.1:9092'
TOPIC = 'err-topic'
GHOST = 'no-such-topic'
print('confluent-kafka', version(), 'librdkafka', libversion(), 'kafka-python', kafka.__version__)


def step(name, fn, *a, **kw):
    try:
        r = fn(*a, **kw)
        print('OK  ', name, '->', repr(r)[:400])
        return r
    except Exception as e:  # noqa: BLE001
        print('FAIL', name, '->', type(e).__name__, e)


adm = KafkaAdminClient(bootstrap_servers=BOOT, client_id='err-admin')
mgr = adm._manager  # the admin client's connection manager; sends any ApiMessage


def send(req):
    return mgr.run(mgr.send, req)


def records(n, tag):
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    now = int(time.time() * 1000)
    for i in range(n):
        b.append(now, key=b'%s-%d' % (tag, i), value=b'{"tag":"%s","i":%d}' % (tag, i), headers=[])
    b.close()
    return b.buffer()


step('create_topics', adm.create_topics, [NewTopic(TOPIC, num_partitions=1, replication_factor=1)])
time.sleep(0.3)
step('create_topics again (TOPIC_ALREADY_EXISTS)', adm.create_topics,
     [NewTopic(TOPIC, num_partitions=1, replication_factor=1)])
step('describe_topics unknown (Metadata)', adm.describe_topics, [GHOST])

P = ProduceRequest.TopicProduceData
step('Produce acks=1 unknown topic', send, ProduceRequest(
    transactional_id=None, acks=1, timeout_ms=5000,
    topic_data=[P(name=GHOST, partition_data=[P.PartitionProduceData(index=0, records=records(2, 'ghost'))])]))
step('Produce acks=1 err-topic partition 7', send, ProduceRequest(
    transactional_id=None, acks=1, timeout_ms=5000,
    topic_data=[P(name=TOPIC, partition_data=[P.PartitionProduceData(index=7, records=records(2, 'p7'))])]))

F = FetchRequest.FetchTopic


def fetch(topic=None, topic_id=None, partition=0, **kw):
    t = F(partitions=[F.FetchPartition(partition=partition, current_leader_epoch=-1, fetch_offset=0,
                                       last_fetched_epoch=-1, log_start_offset=-1,
                                       partition_max_bytes=65536)])
    if topic is not None:
        t.topic = topic
    if topic_id is not None:
        t.topic_id = topic_id
    return FetchRequest(replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20,
                        isolation_level=0, session_id=0, session_epoch=-1, topics=[t],
                        forgotten_topics_data=[], rack_id='', **kw)


step('Fetch v12 unknown topic', send, fetch(topic=GHOST, max_version=12))
step('Fetch v12 err-topic partition 7', send, fetch(topic=TOPIC, partition=7, max_version=12))
step('Fetch unknown topic id', send, fetch(topic_id=uuid.UUID('0badc0de-0000-4000-8000-00000000dead'),
                                           min_version=13))

L = ListOffsetsRequest.ListOffsetsTopic
step('ListOffsets unknown topic / partition', send, ListOffsetsRequest(
    replica_id=-1, isolation_level=0, timeout_ms=5000,
    topics=[L(name=GHOST, partitions=[L.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1,
                                                             timestamp=-1, max_num_offsets=1)]),
            L(name=TOPIC, partitions=[L.ListOffsetsPartition(partition_index=9, current_leader_epoch=-1,
                                                             timestamp=-2, max_num_offsets=1)])]))
step('delete_topics unknown', adm.delete_topics, [GHOST])

# group-coordinator requests for a group/member that does not exist (sent to the broker,
# which is also the coordinator of every group in a single-node tansu)
step('Heartbeat ghost member', send, HeartbeatRequest(
    group_id='ghost-group', generation_id=3, member_id='ghost-member', group_instance_id=None))
C = OffsetCommitRequest.OffsetCommitRequestTopic
step('OffsetCommit ghost member', send, OffsetCommitRequest(
    group_id='ghost-group', generation_id_or_member_epoch=3, member_id='ghost-member',
    group_instance_id=None, retention_time_ms=-1,
    topics=[C(name=TOPIC, partitions=[C.OffsetCommitRequestPartition(
        partition_index=0, committed_offset=1, committed_leader_epoch=-1, committed_metadata='')])]))
step('SyncGroup ghost member', send, SyncGroupRequest(
    group_id='ghost-group', generation_id=3, member_id='ghost-member', group_instance_id=None,
    protocol_type='consumer', protocol_name='range', assignments=[]))
step('LeaveGroup ghost member', send, LeaveGroupRequest(
    group_id='ghost-group', member_id='ghost-member',
    members=[LeaveGroupRequest.MemberIdentity(member_id='ghost-member', group_instance_id=None,
                                              reason='never joined')]))

# acks=0 with an error the broker cannot report: no response is expected
step('Produce acks=0 unknown topic (no response)', lambda: mgr.send(ProduceRequest(
    transactional_id=None, acks=0, timeout_ms=5000,
    topic_data=[P(name=GHOST, partition_data=[P.PartitionProduceData(index=0, records=records(1, 'ghost0'))])])))
time.sleep(0.5)

# acks=0 producers
p = Producer({'bootstrap.servers': BOOT, 'client.id': 'acks0-rdk', 'acks': 0, 'linger.ms': 5,
              'batch.num.messages': 3})
for i in range(10):
    p.produce(TOPIC, key=b'rdk-%d' % i, value=b'{"acks":0,"client":"librdkafka","i":%d}' % i, partition=0)
    p.poll(0)
    time.sleep(0.02)
print('rdk acks=0 unflushed', p.flush(10))
kp = KafkaProducer(bootstrap_servers=BOOT, client_id='acks0-kp', acks=0, linger_ms=5, batch_size=200)
for i in range(10):
    kp.send(TOPIC, key=b'kp-%d' % i, value=b'{"acks":0,"client":"kafka-python","i":%d}' % i, partition=0)
    time.sleep(0.02)
kp.flush()
kp.close()
time.sleep(0.5)

# consumer groups: the first JoinGroup of each member gets MEMBER_ID_REQUIRED
c = KafkaConsumer(TOPIC, bootstrap_servers=BOOT, client_id='err-kp-consumer', group_id='err-group',
                  auto_offset_reset='earliest', enable_auto_commit=False, consumer_timeout_ms=4000)
n = sum(1 for _ in c)
print('kafka-python group consumed', n)
step('commit', c.commit)
c.close()

rc = Consumer({'bootstrap.servers': BOOT, 'client.id': 'err-rdk-consumer', 'group.id': 'err-group-rdk',
               'auto.offset.reset': 'earliest', 'enable.auto.commit': False})
rc.subscribe([TOPIC])
got = 0
deadline = time.time() + 15
while time.time() < deadline and got < 20:
    m = rc.poll(0.5)
    if m is not None and not m.error():
        got += 1
print('confluent group consumed', got)
rc.commit(asynchronous=False) if got else None
rc.close()
adm.close()
