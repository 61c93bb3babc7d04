#!/usr/bin/env bash
# B2: broker error responses and acks=0 Produce requests (no response on the wire).
# IPv4 loopback, port 9092, tcpdump -i lo. Nothing is pre-created.
# tansu has no quotas, so throttle_time_ms is 0 in every response here too.
source "$(dirname "$0")/reclib.sh"
CAP=$OUT/b2-errors-and-acks0.pcap
broker_start 127.0.0.1
cap_start lo "$CAP"
timeout 150 python3 "$HERE/errors-acks0.py" 127.0.0.1:$PORT
cap_stop
broker_stop
summarize "$CAP" "kafka-python 3.0.12 (KafkaAdminClient, hand-built requests on its connection, KafkaProducer, KafkaConsumer) + confluent-kafka 2.16.1 on librdkafka 2.16.0 (Producer acks=0, Consumer)" \
  "see errors-acks0.py: CreateTopics err-topic then again (TOPIC_ALREADY_EXISTS); Metadata/Produce/Fetch/ListOffsets/DeleteTopics for a non-existent topic or partition; Fetch by an unknown topic id; Heartbeat/OffsetCommit/SyncGroup/LeaveGroup for a group member that does not exist; Produce acks=0 to a non-existent topic; librdkafka and kafka-python producers with acks=0 (10 records each, Produce requests without responses); kafka-python consumer group err-group and confluent consumer group err-group-rdk (first JoinGroup MEMBER_ID_REQUIRED) read them back."
