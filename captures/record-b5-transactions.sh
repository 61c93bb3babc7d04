#!/usr/bin/env bash
# B5: transactional producers whose open transactions the broker aborts, and consumers
# reading committed and uncommitted: ABORT control batches in Fetch (see transactions.py).
# IPv4 loopback, port 9092, tcpdump -i lo. tx-topic (2 partitions) is pre-created.
source "$(dirname "$0")/reclib.sh"
CAP=$OUT/b5-transactions.pcap
broker_start 127.0.0.1
topic tx-topic 2
cap_start lo "$CAP"
timeout 120 python3 "$HERE/transactions.py" 127.0.0.1:$PORT
cap_stop
broker_stop
NOTES="tansu 0.6.0 does not list EndTxn (26) in its ApiVersions, so librdkafka refuses commit_transaction/abort_transaction; tansu itself aborts a transaction left open when the same transactional.id sends InitProducerId again, appending an ABORT control batch (ControlRecordType key v0 type 0, EndTxnMarker value v0 CoordinatorEpoch 0) to each partition the transaction wrote; tansu's Fetch does not filter aborted data for read_committed (both consumers read all 8 records)." \
summarize "$CAP" "confluent-kafka 2.16.1 on librdkafka 2.16.0 (transactional Producer x3, Consumer read_committed and read_uncommitted)" \
  "see transactions.py. tx-topic (2 partitions) pre-created; three producers in turn with transactional.id tx-demo: InitProducerId, the first two AddPartitionsToTxn and 4 transactional records each, left open; the second and third InitProducerId make tansu abort the open transaction (4 ABORT control batches); then a read_committed and a read_uncommitted consumer fetch both partitions from offset 0 (8 control records in Fetch v16 responses)."
