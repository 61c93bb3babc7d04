#!/usr/bin/env bash
# B1: broker on a non-default port (19092), two client libraries on it: confluent-kafka
# (librdkafka 2.16, zstd) and kafka-python 3.0 (gzip) produce, both are members of one consumer
# group, admin create/delete topics from both libraries. IPv4 loopback, tcpdump -i lo.
# A dissector that only knows port 9092 finds nothing here: decode with --ports 19092.
PORT=19092
source "$(dirname "$0")/reclib.sh"
CAP=$OUT/b1-port-19092-mixed-clients.pcap
broker_start 127.0.0.1
cap_start lo "$CAP"
timeout 120 python3 "$HERE/mixed-clients.py" 127.0.0.1:$PORT
cap_stop
broker_stop
summarize "$CAP" "confluent-kafka 2.16.1 on librdkafka 2.16.0 (AdminClient, Producer, Consumer) + kafka-python 3.0.12 (KafkaProducer, KafkaConsumer, KafkaAdminClient)" \
  "broker on 127.0.0.1:19092. confluent AdminClient creates mixed-events(2) + mixed-scratch(1); confluent Producer 20 keyed records zstd (header client=confluent-kafka); kafka-python KafkaProducer 20 keyed records gzip (header client=kafka-python); consumer group mixed-group with one librdkafka member and one kafka-python member running concurrently (range assignor, rebalance, per-record/per-poll commits) reads the 40 records; kafka-python KafkaAdminClient deletes mixed-scratch; confluent list_topics"
