#!/usr/bin/env bash
# B6: a steady producer and two consumer groups, one keeping up (long-polls once the
# producer stops) and one falling behind (lag growing), see consumer-lag.py.
# IPv4 loopback, port 9092, tcpdump -i lo. lag-topic (3 partitions) is pre-created.
source "$(dirname "$0")/reclib.sh"
CAP=$OUT/b6-consumer-lag.pcap
broker_start 127.0.0.1
topic lag-topic 3
cap_start lo "$CAP"
timeout 120 python3 "$HERE/consumer-lag.py" 127.0.0.1:$PORT
cap_stop
broker_stop
summarize "$CAP" "confluent-kafka 2.16.1 on librdkafka 2.16.0 (Producer, Consumer in slow-group), kafka-python 3.0.12 (KafkaConsumer in fast-group)" \
  "see consumer-lag.py. lag-topic (3 partitions) pre-created; lag-producer writes 50 records/s for 20 s (linger.ms 100); fast-group (kafka-python, fetch_max_wait_ms 500) keeps up and long-polls once the producer stops; slow-group (librdkafka, 8 records/s, 1 KB fetch queue, max.partition.fetch.bytes 256) falls behind and commits every 10 records; both consumers run 8 s past the producer."
