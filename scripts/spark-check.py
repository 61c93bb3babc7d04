#!/usr/bin/env python3
"""The export's queries on Apache Spark (PySpark, local mode), checked against stats.

    scripts/spark-check.py FILE...
    KAFKASHARK=target/debug/kafkashark scripts/spark-check.py captures/*.pcap

Exports FILE... as Parquet with `kafkashark export` (KAFKASHARK, default
target/release/kafkashark, with kafkashark-export beside it), reads both tables
with `spark.read.parquet` (the date= and api= directories become columns), runs
docs/export.md's queries in Spark SQL: requests and responses per api and
version, latency p50/p99 by nearest rank, errors per api, each topic
partition's produced and fetched record sets, each consumer's largest lag per
partition; and compares every answer with `kafkashark stats --format json` on
the same files (latency within the histogram's 0.1 % and stats' microsecond).
Prints what it compared; exits 1 on a difference, 3 without pyspark.
Needs pyspark (PyPI) and a Java 17+ runtime.
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    from pyspark.sql import SparkSession
    import pyspark
except ImportError:
    print("spark-check: no pyspark module (pip install pyspark)", file=sys.stderr)
    sys.exit(3)

files = sys.argv[1:]
if not files:
    print(__doc__.strip().splitlines()[2], file=sys.stderr)
    sys.exit(2)
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ks = os.environ.get("KAFKASHARK", os.path.join(root, "target/release/kafkashark"))
out = tempfile.mkdtemp(prefix="kafkashark-spark-")
subprocess.run([ks, "export", *files, "--out", out], check=True, stderr=subprocess.DEVNULL)
stats = json.loads(subprocess.run([ks, "stats", "--format", "json", *files], check=True,
                                  capture_output=True).stdout)

spark = (SparkSession.builder.master("local[2]").appName("kafkashark-spark-check")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
spark.read.parquet(f"{out}/messages").createOrReplaceTempView("m")
spark.read.parquet(f"{out}/partitions").createOrReplaceTempView("p")
q = lambda sql: spark.sql(sql).collect()

failures = []


def same(what, ours, theirs):
    if ours != theirs:
        failures.append(f"{what}: stats {ours}, spark {theirs}")


(rows,) = q("select count(*) from m")[0]
(prows,) = q("select count(*) from p")[0]
print(f"spark {pyspark.__version__} local[2], java {spark.sparkContext._jvm.System.getProperty('java.version')}: "
      f"{len(files)} capture(s), messages {rows} rows, partitions {prows} rows")
same("messages", stats["summary"]["messages"], rows)

counts = {}
for key, kind, version, n in q("""select api_key, kind, api_version, count(*) from m
                                  where api_key is not null group by all"""):
    counts[(key, kind, version)] = n
latency = {}
for key, n, p50, p99 in q("""select api_key, count(*),
        element_at(sort_array(collect_list(latency_ms)), cast(greatest(1, ceil(0.5 * count(*))) as int)),
        element_at(sort_array(collect_list(latency_ms)), cast(greatest(1, ceil(0.99 * count(*))) as int))
        from m where latency_ms is not null and api_key is not null group by all"""):
    latency[key] = (n, p50, p99)
errors = {}
for key, code, n in q("""select api_key, code, count(*) from
        (select api_key, explode(error_codes) as code from m
         where kind = 'response' and api_key is not null) group by all"""):
    errors.setdefault(key, {})[code] = n
code_of = {e["error"]: e["code"] for e in stats["errors"]}
versions = 0
for a in stats["apis"]:
    key, name = a["api_key"], a["api_name"]
    for v in a["versions"]:
        versions += 1
        for kind in ("request", "response"):
            same(f"{name} v{v['version']} {kind}s", v[kind + "s"],
                 counts.get((key, kind, v["version"]), 0))
    lat = a.get("latency_ms") or {}
    if lat.get("count"):
        n, p50, p99 = latency.get(key, (0, None, None))
        same(f"{name} latency count", lat["count"], n)
        for p, theirs in (("p50", p50), ("p99", p99)):
            ours = lat[p]
            if theirs is None or not (theirs - 0.0005 <= ours <= theirs * 1.001 + 0.0005):
                failures.append(f"{name} latency {p}: stats {ours}, spark {theirs}")
    same(f"{name} errors", {code_of[e]: n for e, n in a["errors"].items()}, errors.get(key, {}))
print(f"apis: {len(stats['apis'])} apis, {versions} versions: requests and responses per version, "
      f"latency count, p50 and p99, errors per code")

sides = {}
for topic, partition, side, *sums in q("""select topic, partition,
        if(api_key = 0, 'produce', 'fetch'), sum(record_sets), sum(bytes), sum(batches),
        sum(records), sum(compressed_bytes), sum(decompressed_bytes) from p
        where (api_key = 0 and kind = 'request') or (api_key in (1, 78) and kind = 'response')
        group by all having sum(record_sets) > 0"""):
    sides[(topic, partition, side)] = [int(x) for x in sums]
KEYS = ["record_sets", "bytes", "batches", "records", "compressed_bytes", "decompressed_bytes"]
compared = 0
for t in stats["topics"]:
    for side in ("produce", "fetch"):
        if t[side]["record_sets"] == 0:
            continue
        compared += 1
        same(f"{t['topic']}/{t['partition']} {side}", [t[side][k] for k in KEYS],
             sides.pop((t["topic"], t["partition"], side), None))
for k in sides:
    failures.append(f"{k}: in spark only")
print(f"topics: {compared} topic partition sides: record sets, bytes, batches, records, "
      f"compressed and decompressed bytes")

lags = {}
for client, topic, partition, lag in q("""select q.client_id, q.topic, q.partition,
        max(r.high_watermark - greatest(q.fetch_offset, coalesce(r.last_offset + 1, q.fetch_offset)))
        from p q join p r
          on r.capture = q.capture and r.stream = q.stream and r.correlation_id = q.correlation_id
         and r.topic = q.topic and r.partition = q.partition and r.kind = 'response'
        where q.api_key = 1 and q.kind = 'request' and r.high_watermark is not null
        group by all"""):
    lags[(client, topic, partition)] = lag
for r in stats["lag"]["partitions"]:
    same(f"lag {r['client']}/{r['topic']}/{r['partition']}", r["max_lag"],
         lags.get((r["client"], r["topic"], r["partition"])))
print(f"lag: {len(stats['lag']['partitions'])} consumer partitions: max lag")
spark.stop()
subprocess.run(["rm", "-rf", out], check=False)
for f in failures:
    print("DIFFERENT", f)
print("OK: Spark's answers equal stats'" if not failures else f"{len(failures)} differences")
sys.exit(1 if failures else 0)
