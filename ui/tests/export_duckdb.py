#!/usr/bin/env python3
"""Queries a `kafkashark export` directory with DuckDB, for ui/tests/export.rs.

    export_duckdb.py DIR FORMAT

Reads DIR/messages/**/*.FORMAT and DIR/partitions/**/*.FORMAT (parquet, jsonl
or csv) with hive partitioning on and prints one JSON object: per api key, the
requests and responses (in all and per version), the latency count and its
50th and 99th percentiles by nearest rank (the sample at rank ceil(q * n), as
kafkashark's stats ranks them), the error codes counted, the rows and the sum
of the size fields; and per topic partition, the record sets of Produce
requests and of Fetch responses summed where there are any (sets, bytes, batches, records,
compressed and decompressed bytes); and per client and partition the largest
consumer lag after a Fetch response; and the messages another capture point saw
too, per that capture, with those of them that carry a latency there, the sum
of those latencies and the largest distance between a message's two times
(its own and the other point's, on the first file's clock). Exits 3 when the
duckdb module is missing.
"""

import json
import sys

try:
    import duckdb
except ImportError:
    print("no duckdb module", file=sys.stderr)
    sys.exit(3)

path, fmt = sys.argv[1], sys.argv[2]


def reader(table):
    glob = f"{path}/{table}/**/*.{fmt}"
    return {
        "parquet": f"read_parquet('{glob}', hive_partitioning = true)",
        "jsonl": f"read_json('{glob}', hive_partitioning = true, format = 'newline_delimited')",
        "csv": f"read_csv('{glob}', hive_partitioning = true, header = true, quote = '\"', escape = '\"')",
    }[fmt]


db = duckdb.connect()
db.sql(f"create view m as select * from {reader('messages')}")
db.sql(f"create view p as select * from {reader('partitions')}")
out = {"apis": {}, "rows": None, "length": None}
((rows, length),) = db.sql("select count(*), sum(length) from m").fetchall()
out["rows"], out["length"] = rows, int(length)
for key, kind, version, n in db.sql(
    "select api_key, kind, api_version, count(*) from m where api_key is not null group by all"
).fetchall():
    a = out["apis"].setdefault(str(key), {"requests": 0, "responses": 0, "versions": {}, "errors": {}})
    a[kind + "s"] += n
    v = a["versions"].setdefault(str(version), {"requests": 0, "responses": 0})
    v[kind + "s"] += n
for key, n, p50, p99 in db.sql(
    """select api_key, count(*),
              list_sort(list(latency_ms))[greatest(1, ceil(0.5 * count(*)))::int],
              list_sort(list(latency_ms))[greatest(1, ceil(0.99 * count(*)))::int]
       from m where latency_ms is not null and api_key is not null group by all"""
).fetchall():
    out["apis"][str(key)]["latency"] = {"count": n, "p50": p50, "p99": p99}
# CSV holds a list as its JSON text.
codes = "from_json(error_codes, '[\"SMALLINT\"]')" if fmt == "csv" else "error_codes"
for key, code, n in db.sql(
    f"""select api_key, code, count(*) from
          (select api_key, unnest({codes}) as code from m where kind = 'response' and api_key is not null)
        group by all"""
).fetchall():
    out["apis"][str(key)]["errors"][str(code)] = n
# Produce requests' and Fetch responses' record sets, per topic partition.
out["topics"] = {}
for topic, partition, side, sets, nbytes, batches, records, comp, decomp in db.sql(
    """select topic, partition, if(api_key = 0, 'produce', 'fetch') as side,
              sum(record_sets), sum(bytes), sum(batches), sum(records),
              sum(compressed_bytes), sum(decompressed_bytes)
       from p
       where (api_key = 0 and kind = 'request') or (api_key in (1, 78) and kind = 'response')
       group by all having sum(record_sets) > 0"""
).fetchall():
    t = out["topics"].setdefault(f"{topic}/{partition}", {})
    t[side] = {"record_sets": int(sets), "bytes": int(nbytes), "batches": int(batches),
               "records": int(records), "compressed_bytes": int(comp),
               "decompressed_bytes": int(decomp)}
# Consumer lag after each Fetch response (the high watermark less the offset
# after the records it returned, else the offset asked), its largest per
# client, topic and partition: stats' max lag.
out["lag"] = {}
for client, topic, partition, lag in db.sql(
    """select q.client_id, q.topic, q.partition,
              max(r.high_watermark - greatest(q.fetch_offset, coalesce(r.last_offset + 1, q.fetch_offset)))
       from p q join p r
         on r.capture = q.capture and r.stream = q.stream and r.correlation_id = q.correlation_id
        and r.topic = q.topic and r.partition = q.partition and r.kind = 'response'
       where q.api_key = 1 and q.kind = 'request' and r.high_watermark is not null
       group by all"""
).fetchall():
    out["lag"][f"{client}/{topic}/{partition}"] = int(lag)
# The messages another capture point saw: per that capture, how many, how
# many carry its latency, their sum, and how far apart (in ms) the two
# points' times of one message are at most (cast: in JSONL and CSV a column
# with no value in any row has no type), and the types Parquet gave them.
out["also"] = {}
for capture, n, timed, total, apart in db.sql(
    """select also_capture, count(*), count(also_latency_ms), sum(also_latency_ms::double),
              max(abs(epoch_us(also_ts::timestamp) - epoch_us(ts::timestamp))) / 1000
       from m where also_capture is not null group by all"""
).fetchall():
    out["also"][capture] = {"messages": n, "timed": timed, "latency_ms": total or 0.0,
                            "apart_ms": float(apart)}
if fmt == "parquet":
    ((out["also_types"]),) = db.sql(
        """select [typeof(also_capture), typeof(also_ts), typeof(also_frame),
                   typeof(also_first_frame), typeof(also_latency_ms)] from m limit 1"""
    ).fetchall()[0]
print(json.dumps(out, sort_keys=True))
