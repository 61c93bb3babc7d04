#!/usr/bin/env python3
"""Queries a `kafkashark export` directory with DuckDB, for ui/tests/export.rs.

    export_duckdb.py DIR FORMAT

Reads DIR/messages/**/*.FORMAT (parquet, jsonl or csv) with hive partitioning
on and prints one JSON object: per api key, the requests and responses (in
all and per version), the latency count and its 50th and 99th percentiles by
nearest rank (the sample at rank ceil(q * n), as kafkashark's stats ranks
them), the error codes counted, and per table the rows and the sum of the
size fields. Exits 3 when the duckdb module is missing.
"""

import json
import sys

try:
    import duckdb
except ImportError:
    print("no duckdb module", file=sys.stderr)
    sys.exit(3)

path, fmt = sys.argv[1], sys.argv[2]
glob = f"{path}/messages/**/*.{fmt}"
reader = {
    "parquet": f"read_parquet('{glob}', hive_partitioning = true)",
    "jsonl": f"read_json('{glob}', hive_partitioning = true, format = 'newline_delimited')",
    "csv": f"read_csv('{glob}', hive_partitioning = true, header = true)",
}[fmt]
db = duckdb.connect()
db.sql(f"create view m as select * from {reader}")
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
print(json.dumps(out, sort_keys=True))
