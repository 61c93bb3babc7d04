#!/usr/bin/env python3
"""Requests the broker answers with errors, and Produce requests with acks=0.

Steps, in order (what tansu 0.6.0 answers in brackets):
kafka-python 3.0 KafkaAdminClient, plus hand-built requests sent on its connection (versions
negotiated from ApiVersions as usual):
  - CreateTopics err-topic (1 partition) [ok], CreateTopics err-topic again [36 TOPIC_ALREADY_EXISTS];
  - Metadata for no-such-topic [3 UNKNOWN_TOPIC_OR_PARTITION];
  - Fetch v12 (by name) for no-such-topic and for partition 7 of err-topic [0, empty];
  - Fetch v17 (by topic id) with a made-up topic id [partition error 3];
  - ListOffsets for no-such-topic and for partition 9 of err-topic [0];
  - DeleteTopics no-such-topic [3];
  - Produce acks=1 to no-such-topic and to err-topic partition 7 [0: tansu's memory engine
    accepts writes to any topic/partition name];
  - Heartbeat / OffsetCommit / SyncGroup / LeaveGroup for a member of a group that does not
    exist [25 UNKNOWN_MEMBER_ID, except OffsetCommit: 0];
  - Produce acks=0 (hand-built) to no-such-topic-acks0.
acks=0 producers: confluent-kafka (librdkafka 2.16) 10 records, kafka-python 10 records, both
to err-topic. tansu answers acks=0 Produce requests anyway (a Kafka broker sends nothing),
so every acks=0 request above is followed by a response its client does not expect
(kafka-python drops the connection on it and reconnects for each record).
Fire-and-forget: acks=0 Produce v9 requests (1, then 3 pipelined) written on fresh
connections that are then reset (SO_LINGER 0) while the broker is paused (SIGSTOP on
$BROKER_PID): these stay unanswered.
Consumer groups err-group (kafka-python) and err-group-rdk (confluent-kafka) read err-topic;
each member's first JoinGroup is answered 79 MEMBER_ID_REQUIRED.
usage: BROKER_PID=PID errors-acks0.py BOOTSTRAP"""
import os
import signal
import socket
import struct
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

# tansu 0.6.0's memory engine accepts Produce to any topic/partition name (no error; the
# partition springs into existence), so these two are answered error_code 0.
P = ProduceRequest.TopicProduceData
step('Produce acks=1 unknown topic', send, ProduceRequest(
    transactional_id=None, acks=1, timeout_ms=5000,
    topic_data=[P(name=GHOST, partition_data=[P.PartitionProduceData(index=0, records=records(2, b'ghost'))])]))
step('Produce acks=1 err-topic partition 7', send, ProduceRequest(
    transactional_id=None, acks=1, timeout_ms=5000,
    topic_data=[P(name=TOPIC, partition_data=[P.PartitionProduceData(index=7, records=records(2, b'p7'))])]))

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

# acks=0 Produce to another topic that does not exist: no response on the wire, whatever
# the outcome (tansu accepts it, as above)
step('Produce acks=0 unknown topic (no response)', lambda: mgr.send(ProduceRequest(
    transactional_id=None, acks=0, timeout_ms=5000,
    topic_data=[P(name=GHOST + '-acks0', partition_data=[P.PartitionProduceData(index=0, records=records(1, b'ghost0'))])])))
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



# tansu 0.6.0 answers acks=0 Produce requests anyway (a Kafka broker sends nothing back), so
# the acks=0 requests above all get a response. For Produce requests that really stay
# unanswered: a fire-and-forget sender writes acks=0 requests on a fresh connection and
# resets it (SO_LINGER 0) right away. So that the reset always wins the race against the
# broker's reply, the broker is paused (SIGSTOP; its pid comes from $BROKER_PID, set by the
# recording script) while this happens; the kernel still accepts the connection.
def fire_and_forget(n, first_corr):
    host, port = BOOT.rsplit(':', 1)
    data = b''
    for i in range(n):
        req = ProduceRequest(transactional_id=None, acks=0, timeout_ms=5000, topic_data=[
            P(name=TOPIC, partition_data=[P.PartitionProduceData(index=0, records=records(1, b'ff%d' % i))])])
        req.with_header(correlation_id=first_corr + i, client_id='acks0-fire-and-forget')
        data += req.encode(version=9, header=True, framed=True)
    s = socket.create_connection((host, int(port)))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    s.sendall(data)
    time.sleep(0.05)
    s.close()
    print('fire-and-forget: %d acks=0 Produce v9 request(s), connection reset' % n)


broker_pid = int(os.environ.get('BROKER_PID') or 0)
if broker_pid:
    os.kill(broker_pid, signal.SIGSTOP)
try:
    fire_and_forget(1, 100)
    fire_and_forget(3, 200)
finally:
    if broker_pid:
        time.sleep(0.1)
        os.kill(broker_pid, signal.SIGCONT)
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
idle_since = time.time()
while time.time() < deadline and time.time() - idle_since < 3:
    m = rc.poll(0.5)
    if m is not None and not m.error():
        got += 1
        idle_since = time.time()
print('confluent group consumed', got)
rc.commit(asynchronous=False) if got else None
rc.close()
adm.close()
