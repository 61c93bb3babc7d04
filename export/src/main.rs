//! `kafkashark-export`: the writer of `kafkashark export`. It reads rows of
//! the tables (`kafkashark::export::TABLES`: `messages`, `partitions`) on
//! standard input, one JSON object a line as `kafkashark::export` writes
//! them, and writes each under `--out` in its table's directory as Parquet
//! (typed by the table's columns, snappy), JSONL or CSV, hive-partitioned
//! by the rows' `date` and `api`:
//! `OUT/TABLE/date=YYYY-MM-DD/api=NAME/part-N.parquet`.
//!
//! Memory is bounded whatever the input's size: a partition's rows go to
//! its file in batches of [`BATCH_ROWS`] (a Parquet row group closes every
//! [`ROW_GROUP_ROWS`] rows), and at most [`MAX_OPEN`] files are open (past
//! it the longest unused is closed; its partition's next rows start a new
//! part). A row that is not what the schema says stops the writer with its
//! line number.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int16Builder, Int32Builder, Int64Builder, ListBuilder,
    StringBuilder, StringDictionaryBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use clap::Parser;
use kafkashark::export::{Column, ColumnType, Table, PARTITION_KEYS, TABLES};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde_json::Value;

/// Rows a Parquet part gathers before they go to its writer.
const BATCH_ROWS: usize = 8192;
/// Rows of a Parquet row group.
const ROW_GROUP_ROWS: usize = 65_536;
/// Files open at once.
const MAX_OPEN: usize = 32;

/// The files' format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Parquet,
    Jsonl,
    Csv,
}

impl Format {
    fn ext(self) -> &'static str {
        match self {
            Format::Parquet => "parquet",
            Format::Jsonl => "jsonl",
            Format::Csv => "csv",
        }
    }
}

/// Writes the rows read on standard input (see the crate's doc).
#[derive(Parser, Debug)]
#[command(name = "kafkashark-export", version, about)]
struct Args {
    /// The files' format.
    #[arg(long, value_enum)]
    format: Format,
    /// The directory the tables go in.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

fn main() -> ExitCode {
    let a = Args::parse();
    match run(&a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One write: the other program writes to the same standard
            // error, and a line written in pieces could be cut by its lines.
            let line = format!("kafkashark-export: {e}\n");
            let _ = std::io::stderr().write_all(line.as_bytes());
            ExitCode::from(2)
        }
    }
}

fn run(a: &Args) -> Result<(), String> {
    let mut parts = Parts::new(a.out.clone(), a.format);
    let stdin = std::io::stdin().lock();
    for (n, line) in stdin.split(b'\n').enumerate() {
        let line = line.map_err(|e| format!("reading rows: {e}"))?;
        if line.is_empty() {
            continue;
        }
        let row: Value =
            serde_json::from_slice(&line).map_err(|e| format!("row {}: {e}", n + 1))?;
        parts
            .push(&row)
            .map_err(|e| format!("row {}: {e}", n + 1))?;
    }
    parts.close()
}

/// A partition key's value as a directory name: letters, digits, `-`, `_`
/// and `.` kept, anything else `_`.
fn dir_value(v: &str) -> String {
    v.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A file's table (its index in `TABLES`) and partition key values.
type PartKey = (usize, Vec<String>);

/// The open files of the tables' partitions, and how many parts each has had.
struct Parts {
    dir: PathBuf,
    format: Format,
    open: HashMap<PartKey, (u64, Part)>,
    made: HashMap<PartKey, u32>,
    clock: u64,
}

impl Parts {
    fn new(dir: PathBuf, format: Format) -> Parts {
        Parts {
            dir,
            format,
            open: HashMap::new(),
            made: HashMap::new(),
            clock: 0,
        }
    }

    fn push(&mut self, row: &Value) -> Result<(), String> {
        let table = match row.get("table") {
            Some(Value::String(t)) => TABLES
                .iter()
                .position(|x| x.name == t)
                .ok_or_else(|| format!("no table {t}"))?,
            _ => return Err("no table key".into()),
        };
        let values: Vec<String> = PARTITION_KEYS
            .iter()
            .map(|k| match row.get(k) {
                Some(Value::String(s)) => Ok(s.clone()),
                _ => Err(format!("no partition key {k}")),
            })
            .collect::<Result<_, _>>()?;
        let key = (table, values);
        self.clock += 1;
        if !self.open.contains_key(&key) {
            if self.open.len() >= MAX_OPEN {
                let oldest = self
                    .open
                    .iter()
                    .min_by_key(|(_, (t, _))| *t)
                    .map(|(k, _)| k.clone());
                if let Some((_, p)) = oldest.and_then(|k| self.open.remove(&k)) {
                    p.close()?;
                }
            }
            let n = self.made.entry(key.clone()).or_insert(0);
            let mut dir = self.dir.join(TABLES[table].name);
            for (k, v) in PARTITION_KEYS.iter().zip(&key.1) {
                dir.push(format!("{k}={}", dir_value(v)));
            }
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let path = dir.join(format!("part-{n}.{}", self.format.ext()));
            *n += 1;
            let part = Part::create(&path, self.format, TABLES[table])?;
            self.open.insert(key.clone(), (self.clock, part));
        }
        let (used, part) = self.open.get_mut(&key).ok_or("a partition not open")?;
        *used = self.clock;
        part.push(row)
    }

    fn close(self) -> Result<(), String> {
        for (_, (_, p)) in self.open {
            p.close()?;
        }
        Ok(())
    }
}

/// One file being written.
enum Part {
    Parquet(Box<ParquetPart>),
    Jsonl(BufWriter<File>, PathBuf, &'static [Column]),
    Csv(BufWriter<File>, PathBuf, &'static [Column]),
}

impl Part {
    fn create(path: &Path, format: Format, table: Table) -> Result<Part, String> {
        let io = |e: std::io::Error| format!("{}: {e}", path.display());
        let file = File::create(path).map_err(io)?;
        let columns = table.columns;
        Ok(match format {
            Format::Parquet => Part::Parquet(Box::new(ParquetPart::new(file, path, columns)?)),
            Format::Jsonl => Part::Jsonl(BufWriter::new(file), path.to_path_buf(), columns),
            Format::Csv => {
                let mut w = BufWriter::new(file);
                let names: Vec<&str> = columns.iter().map(|c| c.name).collect();
                writeln!(w, "{}", names.join(",")).map_err(io)?;
                Part::Csv(w, path.to_path_buf(), columns)
            }
        })
    }

    fn push(&mut self, row: &Value) -> Result<(), String> {
        match self {
            Part::Parquet(p) => p.push(row),
            Part::Jsonl(w, path, columns) => {
                let io = |e: std::io::Error| format!("{}: {e}", path.display());
                let mut first = true;
                w.write_all(b"{").map_err(io)?;
                for c in columns.iter() {
                    if !std::mem::take(&mut first) {
                        w.write_all(b",").map_err(io)?;
                    }
                    serde_json::to_writer(&mut *w, c.name).map_err(|e| e.to_string())?;
                    w.write_all(b":").map_err(io)?;
                    let v = row.get(c.name).unwrap_or(&Value::Null);
                    serde_json::to_writer(&mut *w, v).map_err(|e| e.to_string())?;
                }
                w.write_all(b"}\n").map_err(io)
            }
            Part::Csv(w, path, columns) => {
                let cells: Vec<String> = columns
                    .iter()
                    .map(|c| csv_cell(row.get(c.name).unwrap_or(&Value::Null)))
                    .collect();
                writeln!(w, "{}", cells.join(",")).map_err(|e| format!("{}: {e}", path.display()))
            }
        }
    }

    fn close(self) -> Result<(), String> {
        match self {
            Part::Parquet(p) => p.close(),
            Part::Jsonl(mut w, path, _) | Part::Csv(mut w, path, _) => {
                w.flush().map_err(|e| format!("{}: {e}", path.display()))
            }
        }
    }
}

/// A CSV cell (RFC 4180): empty for null, text quoted when it holds a
/// comma, a quote or a line break, lists as their JSON text.
fn csv_cell(v: &Value) -> String {
    let text = match v {
        Value::Null => return String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// A column's values gathered for the next batch.
enum Builder {
    Str(StringBuilder),
    Dict(StringDictionaryBuilder<Int32Type>),
    I16(Int16Builder),
    I32(Int32Builder),
    I64(Int64Builder),
    F64(Float64Builder),
    Bool(BooleanBuilder),
    Ts(TimestampMicrosecondBuilder),
    ListI16(ListBuilder<Int16Builder>),
    ListStr(ListBuilder<StringBuilder>),
}

/// The Arrow type of a column.
fn arrow_type(ty: ColumnType) -> DataType {
    let item = |t: DataType| Arc::new(Field::new("item", t, true));
    match ty {
        ColumnType::Str => DataType::Utf8,
        ColumnType::Dict => {
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
        }
        ColumnType::I16 => DataType::Int16,
        ColumnType::I32 => DataType::Int32,
        ColumnType::I64 => DataType::Int64,
        ColumnType::F64 => DataType::Float64,
        ColumnType::Bool => DataType::Boolean,
        ColumnType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        ColumnType::ListI16 => DataType::List(item(DataType::Int16)),
        ColumnType::ListStr => DataType::List(item(DataType::Utf8)),
    }
}

/// The Arrow schema of a table's files.
fn schema(columns: &[Column]) -> SchemaRef {
    let fields: Vec<Field> = columns
        .iter()
        .map(|c| Field::new(c.name, arrow_type(c.ty), true))
        .collect();
    Arc::new(Schema::new(fields))
}

impl Builder {
    fn new(ty: ColumnType) -> Builder {
        match ty {
            ColumnType::Str => Builder::Str(StringBuilder::new()),
            ColumnType::Dict => Builder::Dict(StringDictionaryBuilder::new()),
            ColumnType::I16 => Builder::I16(Int16Builder::new()),
            ColumnType::I32 => Builder::I32(Int32Builder::new()),
            ColumnType::I64 => Builder::I64(Int64Builder::new()),
            ColumnType::F64 => Builder::F64(Float64Builder::new()),
            ColumnType::Bool => Builder::Bool(BooleanBuilder::new()),
            ColumnType::Timestamp => {
                Builder::Ts(TimestampMicrosecondBuilder::new().with_timezone("UTC"))
            }
            ColumnType::ListI16 => Builder::ListI16(ListBuilder::new(Int16Builder::new())),
            ColumnType::ListStr => Builder::ListStr(ListBuilder::new(StringBuilder::new())),
        }
    }

    /// Appends `v`, of column `c`; a value of another type is an error.
    fn push(&mut self, c: &Column, v: &Value) -> Result<(), String> {
        let bad = || format!("column {}: {v} is not a {:?}", c.name, c.ty);
        let int = |lo: i64, hi: i64| -> Result<i64, String> {
            v.as_i64().filter(|n| (lo..=hi).contains(n)).ok_or_else(bad)
        };
        let null = v.is_null();
        match self {
            Builder::Str(b) if null => b.append_null(),
            Builder::Str(b) => b.append_value(v.as_str().ok_or_else(bad)?),
            Builder::Dict(b) if null => b.append_null(),
            Builder::Dict(b) => {
                b.append(v.as_str().ok_or_else(bad)?)
                    .map_err(|e| e.to_string())?;
            }
            Builder::I16(b) if null => b.append_null(),
            Builder::I16(b) => b.append_value(int(i16::MIN.into(), i16::MAX.into())? as i16),
            Builder::I32(b) if null => b.append_null(),
            Builder::I32(b) => b.append_value(int(i32::MIN.into(), i32::MAX.into())? as i32),
            Builder::I64(b) if null => b.append_null(),
            Builder::I64(b) => b.append_value(int(i64::MIN, i64::MAX)?),
            Builder::F64(b) if null => b.append_null(),
            Builder::F64(b) => b.append_value(v.as_f64().ok_or_else(bad)?),
            Builder::Bool(b) if null => b.append_null(),
            Builder::Bool(b) => b.append_value(v.as_bool().ok_or_else(bad)?),
            Builder::Ts(b) if null => b.append_null(),
            Builder::Ts(b) => {
                let t = chrono::DateTime::parse_from_rfc3339(v.as_str().ok_or_else(bad)?)
                    .map_err(|_| bad())?;
                b.append_value(t.timestamp_micros());
            }
            Builder::ListI16(b) if null => b.append_null(),
            Builder::ListI16(b) => {
                for x in v.as_array().ok_or_else(bad)? {
                    let n = x
                        .as_i64()
                        .and_then(|n| i16::try_from(n).ok())
                        .ok_or_else(bad)?;
                    b.values().append_value(n);
                }
                b.append(true);
            }
            Builder::ListStr(b) if null => b.append_null(),
            Builder::ListStr(b) => {
                for x in v.as_array().ok_or_else(bad)? {
                    b.values().append_value(x.as_str().ok_or_else(bad)?);
                }
                b.append(true);
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Str(b) => Arc::new(b.finish()),
            Builder::Dict(b) => Arc::new(b.finish()),
            Builder::I16(b) => Arc::new(b.finish()),
            Builder::I32(b) => Arc::new(b.finish()),
            Builder::I64(b) => Arc::new(b.finish()),
            Builder::F64(b) => Arc::new(b.finish()),
            Builder::Bool(b) => Arc::new(b.finish()),
            Builder::Ts(b) => Arc::new(b.finish()),
            Builder::ListI16(b) => Arc::new(b.finish()),
            Builder::ListStr(b) => Arc::new(b.finish()),
        }
    }
}

/// A Parquet file being written: the rows of its next batch, and the writer.
struct ParquetPart {
    path: PathBuf,
    schema: SchemaRef,
    columns: &'static [Column],
    cols: Vec<Builder>,
    rows: usize,
    writer: ArrowWriter<File>,
}

impl ParquetPart {
    fn new(file: File, path: &Path, columns: &'static [Column]) -> Result<ParquetPart, String> {
        let schema = schema(columns);
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_created_by(format!("kafkashark-export {}", env!("CARGO_PKG_VERSION")))
            .build();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(ParquetPart {
            path: path.to_path_buf(),
            schema,
            columns,
            cols: columns.iter().map(|c| Builder::new(c.ty)).collect(),
            rows: 0,
            writer,
        })
    }

    fn push(&mut self, row: &Value) -> Result<(), String> {
        for (b, c) in self.cols.iter_mut().zip(self.columns) {
            b.push(c, row.get(c.name).unwrap_or(&Value::Null))?;
        }
        self.rows += 1;
        if self.rows >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    /// The gathered rows to the writer.
    fn flush(&mut self) -> Result<(), String> {
        if self.rows == 0 {
            return Ok(());
        }
        let arrays: Vec<ArrayRef> = self.cols.iter_mut().map(Builder::finish).collect();
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        self.rows = 0;
        self.writer
            .write(&batch)
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }

    fn close(mut self) -> Result<(), String> {
        self.flush()?;
        self.writer
            .close()
            .map(|_| ())
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use serde_json::json;

    fn temp_dir(tag: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("kafkashark-export-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// Every file under `dir`, sorted.
    fn files(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.push(p);
                }
            }
        }
        out.sort();
        out
    }

    fn row(api: usize, n: i64) -> Value {
        json!({
            "table": "messages", "date": "2026-12-01", "api": format!("Api{api}"),
            "capture": "a.pcap", "ts": "2026-12-01T09:30:00.123456Z",
            "frame": n, "kind": "response", "api_key": api, "correlation_id": n,
            "latency_ms": 1.5, "error_codes": [3, 6], "topics": ["t-é"],
            "paired": true,
        })
    }

    /// Rows of more partitions than files may be open at once, in turns:
    /// a partition closed to make room starts a new part when its rows come
    /// again, and every row is in the files, typed as the schema says.
    #[test]
    fn every_row_lands_with_files_open_bounded() {
        let dir = temp_dir("parts");
        let mut parts = Parts::new(dir.clone(), Format::Parquet);
        let apis = MAX_OPEN + 8;
        for turn in 0..2 {
            for api in 0..apis {
                for k in 0..3 {
                    let n = (turn * 1000 + api * 10 + k) as i64;
                    parts.push(&row(api, n)).unwrap();
                    assert!(parts.open.len() <= MAX_OPEN);
                }
            }
        }
        parts.close().unwrap();
        let fs = files(&dir);
        // Each partition was closed once to make room, so has two parts.
        assert_eq!(fs.len(), 2 * apis);
        assert!(fs
            .iter()
            .any(|p| p.ends_with("messages/date=2026-12-01/api=Api0/part-1.parquet")));
        let mut frames = Vec::new();
        for f in &fs {
            let r = ParquetRecordBatchReaderBuilder::try_new(File::open(f).unwrap())
                .unwrap()
                .build()
                .unwrap();
            for b in r {
                let b = b.unwrap();
                assert_eq!(b.schema().fields().len(), TABLES[0].columns.len());
                let frame = b
                    .column_by_name("frame")
                    .unwrap()
                    .as_any()
                    .downcast_ref::<arrow_array::Int64Array>()
                    .unwrap();
                frames.extend(frame.values().iter().copied());
                let ts = b
                    .column_by_name("ts")
                    .unwrap()
                    .as_any()
                    .downcast_ref::<arrow_array::TimestampMicrosecondArray>()
                    .unwrap();
                assert_eq!(ts.value(0), 1_796_117_400_123_456);
            }
        }
        frames.sort();
        assert_eq!(frames.len(), 2 * apis * 3);
        frames.dedup();
        assert_eq!(frames.len(), 2 * apis * 3);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A value of the wrong type, or a row without its partition keys, is
    /// refused with the column's name.
    #[test]
    fn a_row_not_of_the_schema_is_refused() {
        let dir = temp_dir("bad");
        let mut parts = Parts::new(dir.clone(), Format::Parquet);
        let mut r = row(1, 1);
        r["length"] = json!("long");
        let e = parts.push(&r).unwrap_err();
        assert!(e.contains("column length"), "{e}");
        r["api_key"] = json!(70_000);
        assert!(parts.push(&r).unwrap_err().contains("column api_key"));
        let e = parts
            .push(&json!({"table": "messages", "capture": "x"}))
            .unwrap_err();
        assert!(e.contains("partition key date"), "{e}");
        let e = parts.push(&json!({"capture": "x"})).unwrap_err();
        assert!(e.contains("no table"), "{e}");
        r["table"] = json!("offsets");
        let e = parts.push(&r).unwrap_err();
        assert!(e.contains("no table offsets"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A `partitions` row goes to the partitions table's directory, typed
    /// by its columns (offsets as int64, the batches' time as a timestamp),
    /// beside the messages of the same day and api.
    #[test]
    fn tables_go_to_their_own_directories() {
        let dir = temp_dir("tables");
        let mut parts = Parts::new(dir.clone(), Format::Parquet);
        parts.push(&row(0, 1)).unwrap();
        let p = json!({
            "table": "partitions", "date": "2026-12-01", "api": "Api0",
            "ts": "2026-12-01T09:30:00.123456Z", "frame": 1, "topic": "t",
            "partition": 3, "high_watermark": 5_000_000_000_i64, "records": 12,
            "codec": "zstd", "max_timestamp": "2026-12-01T09:29:59.999000Z",
        });
        parts.push(&p).unwrap();
        parts.close().unwrap();
        let fs = files(&dir);
        assert_eq!(fs.len(), 2);
        let f = dir.join("partitions/date=2026-12-01/api=Api0/part-0.parquet");
        assert!(fs.contains(&f), "{fs:?}");
        let mut r = ParquetRecordBatchReaderBuilder::try_new(File::open(&f).unwrap())
            .unwrap()
            .build()
            .unwrap();
        let b = r.next().unwrap().unwrap();
        assert_eq!(b.schema().fields().len(), TABLES[1].columns.len());
        let hw = b.column_by_name("high_watermark").unwrap();
        let hw = hw
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .unwrap();
        assert_eq!(hw.value(0), 5_000_000_000);
        let at = b.column_by_name("max_timestamp").unwrap();
        let at = at
            .as_any()
            .downcast_ref::<arrow_array::TimestampMicrosecondArray>()
            .unwrap();
        assert_eq!(at.value(0), 1_796_117_399_999_000);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// CSV cells: quoted when they must be, lists as JSON text, null empty.
    #[test]
    fn csv_cells_are_rfc_4180() {
        assert_eq!(csv_cell(&json!("a,b")), "\"a,b\"");
        assert_eq!(csv_cell(&json!("say \"hi\"")), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_cell(&json!([3, 6])), "\"[3,6]\"");
        assert_eq!(csv_cell(&json!([3])), "[3]");
        assert_eq!(csv_cell(&json!(["x", "y"])), "\"[\"\"x\"\",\"\"y\"\"]\"");
        assert_eq!(csv_cell(&Value::Null), "");
        assert_eq!(csv_cell(&json!(1.5)), "1.5");
    }
}
