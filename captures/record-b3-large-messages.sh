#!/usr/bin/env bash
# B3: very large records (1.2-5 MB) produced by librdkafka and kafka-python and fetched back;
# each Produce request / Fetch response spans many TCP segments. IPv4 loopback, tcpdump -i lo.
# tansu 0.6.0 has no maximum request/frame size by default, so only the clients' limits
# (message.max.bytes, max_request_size, fetch.max.bytes) needed raising.
source "$(dirname "$0")/reclib.sh"
CAP=$OUT/b3-large-messages.pcap
broker_start 127.0.0.1
topic large 1
cap_start lo "$CAP"
timeout 180 python3 "$HERE/large-messages.py" 127.0.0.1:$PORT
cap_stop
broker_stop
summarize "$CAP" "confluent-kafka 2.16.1 on librdkafka 2.16.0 (Producer, Consumer) + kafka-python 3.0.12 (KafkaProducer)" \
  "topic large (1 partition, created before the capture): confluent Producer (message.max.bytes=8000000) sends a 2,000,000-byte random record uncompressed, then a 5,000,000-byte text record zstd; kafka-python KafkaProducer (max_request_size=3000000) sends a 1,200,000-byte random record uncompressed; a confluent consumer (fetch.max.bytes=max.partition.fetch.bytes=8000000) assign()s partition 0 from offset 0 and fetches all three back (sha256 checked)."
