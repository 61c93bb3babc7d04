#!/usr/bin/env bash
# E1: one run seen at two capture points. The same loopback traffic is captured twice:
# e1-client-side.pcap by tcpdump -i lo (Ethernet), from the start; e1-broker-side.pcap by
# a second tcpdump on -i any (Linux cooked SLL2) that starts a second later (the
# producer's and consumer's first connections are already open: it sees them from
# mid-stream) and whose clock is then set 2.75 s ahead with editcap -t, as a broker
# host's unsynchronised clock would be. Loopback has one capture point in truth, so
# both files time each packet alike (within microseconds); the offset is the one
# editcap put in. Both go to two-points/ (a connection there starts mid-stream: the
# per-file checks of the files at the top, which assume whole connections, leave them).
#   TANSU=/path/to/tansu captures/record-e1-two-points.sh
source "$(dirname "$0")/reclib.sh"
mkdir -p "$OUT/two-points"
CLIENT=$OUT/two-points/e1-client-side.pcap
BROKER=$OUT/two-points/e1-broker-side.pcap
broker_start
topic two-points 2
cap_start lo "$CLIENT"
timeout 60 python3 "$HERE/two-points.py" "127.0.0.1:$PORT" &
WORK=$!
sleep 1
rm -f "$RUNDIR/broker-side.pcap"
tcpdump -i any -s 0 -B 262144 -w "$RUNDIR/broker-side.pcap" "tcp port $PORT" 2>"$RUNDIR/tcpdump2.log" &
TCPDUMP2=$!
wait "$WORK"
sleep 1
kill -INT "$TCPDUMP2"; wait "$TCPDUMP2" || true
cat "$RUNDIR/tcpdump2.log"
cap_stop
broker_stop
editcap -F pcap -t 2.75 "$RUNDIR/broker-side.pcap" "$BROKER"
for f in "$CLIENT" "$BROKER"; do
  summarize "$f" "confluent-kafka on librdkafka (Producer, Consumer)" \
    "one run captured at two points: producer writing keyed gzip records for 6 s while consumer group two-points-group reads and commits; the broker-side file starts 1 s late and its clock is 2.75 s ahead (editcap -t 2.75)"
done
