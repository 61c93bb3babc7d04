#!/usr/bin/env bash
# B2: broker error responses and acks=0 Produce requests (no response on the wire).
# IPv4 loopback, port 9092, tcpdump -i lo. Nothing is pre-created.
# tansu has no quotas, so throttle_time_ms is 0 in every response here too. tansu answers
# acks=0 Produce requests as well; the unanswered ones come from connections reset while the
# broker is paused (SIGSTOP), see errors-acks0.py.
source "$(dirname "$0")/reclib.sh"
CAP=$OUT/b2-errors-and-acks0.pcap
broker_start 127.0.0.1
cap_start lo "$CAP"
BROKER_PID=$BROKER_PID timeout 150 python3 "$HERE/errors-acks0.py" 127.0.0.1:$PORT   # pauses the broker briefly, see the script
cap_stop
broker_stop
NOTES="tansu 0.6.0: no quotas, so throttle_time_ms is always 0; Produce to a topic or partition that does not exist succeeds (memory engine); Fetch v12 by name for an unknown topic returns error 0 and no records; acks=0 Produce requests are answered anyway (a Kafka broker would not answer), and kafka-python closes the connection on the unexpected response and reconnects for each record; the 4 fire-and-forget acks=0 requests are the only unanswered Produce requests." \
summarize "$CAP" "kafka-python 3.0.12 (KafkaAdminClient, hand-built requests on its connection, KafkaProducer, KafkaConsumer, raw socket fire-and-forget) + confluent-kafka 2.16.1 on librdkafka 2.16.0 (Producer acks=0, Consumer)" \
  "see errors-acks0.py. CreateTopics err-topic, then again (36 TOPIC_ALREADY_EXISTS); Metadata for no-such-topic (3); Fetch v12 for no-such-topic and err-topic partition 7 (0); Fetch v17 by a made-up topic id (3); ListOffsets no-such-topic / err-topic partition 9 (0); DeleteTopics no-such-topic (3); Produce acks=1 to no-such-topic and err-topic partition 7 (0); Heartbeat/SyncGroup/LeaveGroup for an unknown member (25), OffsetCommit (0); hand-built Produce acks=0; confluent-kafka producer acks=0 (10 records) and kafka-python producer acks=0 (10 records); 4 fire-and-forget acks=0 Produce v9 requests on connections reset while the broker is paused (unanswered); consumer groups err-group (kafka-python) and err-group-rdk (confluent-kafka), first JoinGroup of each member 79 MEMBER_ID_REQUIRED, read err-topic back."
