#!/usr/bin/env python3
"""Runs docs/export.md's ClickHouse queries on a `kafkashark export` directory,
for ui/tests/export.rs, in chdb (ClickHouse's engine embedded, from PyPI).

    export_clickhouse.py DIR

Reads DIR/messages/**/*.parquet and DIR/partitions/**/*.parquet with the
file() table function and hive partitioning on, as the documentation's
queries do (the error query reads file() where the documentation reads
s3()), and prints one JSON object: the ClickHouse version; per api name the
latency count and its 50th and 99th percentiles by nearest rank; per api
name the error codes counted; per topic partition the bytes and records of
Produce requests. Exits 3 when the chdb module is missing.
"""

import json
import sys

try:
    from chdb import session
except ImportError:
    print("no chdb module", file=sys.stderr)
    sys.exit(3)

path = sys.argv[1]
s = session.Session()
s.query("SET use_hive_partitioning = 1")


def rows(sql):
    text = str(s.query(sql, "JSONEachRow"))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


out = {"version": rows("SELECT version() AS v")[0]["v"], "latency": {}, "errors": {}, "produce": {}}
for r in rows(f"""
SELECT api, count() AS n,
       arrayElement(arraySort(groupArray(latency_ms)),
                    toUInt32(greatest(1, ceil(0.5 * count())))) AS p50,
       arrayElement(arraySort(groupArray(latency_ms)),
                    toUInt32(greatest(1, ceil(0.99 * count())))) AS p99
FROM file('{path}/messages/**/*.parquet', Parquet)
WHERE latency_ms IS NOT NULL GROUP BY api"""):
    out["latency"][r["api"]] = {"count": int(r["n"]), "p50": r["p50"], "p99": r["p99"]}
for r in rows(f"""
SELECT api, arrayJoin(error_codes) AS code, count() AS n
FROM file('{path}/messages/**/*.parquet', Parquet)
WHERE kind = 'response' GROUP BY api, code"""):
    out["errors"].setdefault(r["api"], {})[str(r["code"])] = int(r["n"])
for r in rows(f"""
SELECT topic, partition, sum(bytes) AS b, sum(records) AS n
FROM file('{path}/partitions/**/*.parquet', Parquet)
WHERE api = 'Produce' AND kind = 'request' GROUP BY topic, partition"""):
    if int(r["b"]) > 0:
        out["produce"][f"{r['topic']}/{r['partition']}"] = {"bytes": int(r["b"]), "records": int(r["n"])}
print(json.dumps(out, sort_keys=True))
