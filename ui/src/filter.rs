//! The filter language: which messages a view shows (the TUI's `/` bar).
//!
//! Place in the data path: model ([`MessageInfo`]) → **filter** → the views. The
//! text is lexed into tokens that remember their column, parsed by recursive
//! descent into an expression tree, and evaluated against one message and its
//! paired peer. docs/filter.md is the user's description of the language.
//!
//! Invariants: [`Filter::parse`] never panics, whatever the input; every error
//! says what was expected and at which 0-based character column; nesting is
//! capped at [`MAX_DEPTH`], so evaluation, display and drop recurse a bounded
//! amount. Evaluation reads only the message and its peer — no clock, no I/O.
//! Every comparison needs its field: a message without a latency matches neither
//! `latency>5ms` nor `latency!=5ms` (but does match `not latency>5ms`).
//! Evaluation goes through [`Facts`], so that a compact index entry (the TUI's)
//! is tested in place, without building a [`MessageInfo`] or allocating.
//!
//! [`MessageInfo`]: kafkashark::analyzer::MessageInfo

use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;

use kafkashark::analyzer::{Also, MessageInfo};
use kafkashark::kafka::decode::DecodeOptions;
use kafkashark::kafka::decode::Kind;
use kafkashark::kafka::errors::{error_code, error_name};
use kafkashark::kafka::schema::api_name;

mod paths;
pub use paths::{partitions, record_set_paths, records, Tree};
use paths::{Lit, Path};

/// Deepest nesting of parentheses and `not`s accepted.
pub const MAX_DEPTH: usize = 64;

/// Api keys looked up for names (`produce` … ); Kafka 4.x stops well below.
const MAX_API_KEY: i16 = 200;

/// Error codes looked up for did-you-mean suggestions.
const MAX_ERROR_CODE: i16 = 300;

/// What the filter reads of a message: [`MessageInfo`]'s facts, by name.
///
/// [`MessageInfo`]: kafkashark::analyzer::MessageInfo
pub trait Facts {
    /// Request or response.
    fn kind(&self) -> Kind;
    /// Api key.
    fn api_key(&self) -> Option<i16>;
    /// Api version.
    fn api_version(&self) -> Option<i16>;
    /// The client endpoint as shown (`10.0.0.1:5000`).
    fn client_text(&self) -> Cow<'_, str>;
    /// The broker endpoint as shown.
    fn broker_text(&self) -> Cow<'_, str>;
    /// The request's client id.
    fn client_id(&self) -> Option<&str>;
    /// Connection index.
    fn stream(&self) -> u64;
    /// Which of the captures read together it came from.
    fn capture(&self) -> u16;
    /// Correlation id.
    fn correlation_id(&self) -> Option<i32>;
    /// Frame that carried the first byte.
    fn first_frame(&self) -> u64;
    /// Frame that completed the message.
    fn frame(&self) -> u64;
    /// The size field.
    fn length(&self) -> i32;
    /// Topics the message names.
    fn topics(&self) -> &[std::sync::Arc<str>];
    /// Latency of a paired response.
    fn latency_ns(&self) -> Option<u64>;
    /// The part of a paired response's latency spent waiting behind the
    /// connection's earlier responses (head-of-line wait).
    fn hol_wait_ns(&self) -> Option<u64>;
    /// A paired response's service time: its latency less its head-of-line wait.
    fn service_ns(&self) -> Option<u64>;
    /// The round trip of the message's connection, when measured by then
    /// (`MessageInfo::rtt`).
    fn rtt_ns(&self) -> Option<u64>;
    /// A Fetch or ShareFetch response that waited out its `MaxWaitMs` with no
    /// records (`MessageInfo::long_poll`).
    fn long_poll(&self) -> bool;
    /// The response's ThrottleTimeMs.
    fn throttle_time_ms(&self) -> Option<i32>;
    /// Non-zero error codes of a response.
    fn error_codes(&self) -> &[i16];
    /// Paired with its request / response.
    fn paired(&self) -> bool;
    /// A request that expects a response.
    fn expects_response(&self) -> bool;
    /// A response whose api was inferred.
    fn inferred(&self) -> bool;
    /// The first message after a resynchronisation.
    fn resynced(&self) -> bool;
    /// Some bytes did not decode.
    fn malformed(&self) -> bool;
    /// It decoded with a warning (bytes after the body).
    fn warned(&self) -> bool;
    /// The same message as another capture point saw it (`MessageInfo::also`).
    fn also(&self) -> Option<&Also>;
}

/// `print -Y` tests the analyzer's messages as they leave its reorder
/// buffer (and the tests use them as fixtures).
impl Facts for MessageInfo {
    fn kind(&self) -> Kind {
        self.kind
    }
    fn api_key(&self) -> Option<i16> {
        self.api_key.map(|k| k.0)
    }
    fn api_version(&self) -> Option<i16> {
        self.api_version
    }
    fn client_text(&self) -> Cow<'_, str> {
        Cow::Owned(self.client.to_string())
    }
    fn broker_text(&self) -> Cow<'_, str> {
        Cow::Owned(self.broker.to_string())
    }
    fn client_id(&self) -> Option<&str> {
        self.client_id.as_deref()
    }
    fn stream(&self) -> u64 {
        self.stream
    }
    fn capture(&self) -> u16 {
        self.capture
    }
    fn correlation_id(&self) -> Option<i32> {
        self.correlation_id
    }
    fn first_frame(&self) -> u64 {
        self.first_frame
    }
    fn frame(&self) -> u64 {
        self.frame
    }
    fn length(&self) -> i32 {
        self.length
    }
    fn topics(&self) -> &[std::sync::Arc<str>] {
        &self.topics
    }
    fn latency_ns(&self) -> Option<u64> {
        self.latency_ns
    }
    fn hol_wait_ns(&self) -> Option<u64> {
        self.hol_wait_ns
    }
    fn service_ns(&self) -> Option<u64> {
        MessageInfo::service_ns(self)
    }
    fn rtt_ns(&self) -> Option<u64> {
        self.rtt.map(|r| r.ns)
    }
    fn long_poll(&self) -> bool {
        MessageInfo::long_poll(self)
    }
    fn throttle_time_ms(&self) -> Option<i32> {
        self.throttle_time_ms
    }
    fn error_codes(&self) -> &[i16] {
        &self.error_codes
    }
    fn paired(&self) -> bool {
        self.paired
    }
    fn expects_response(&self) -> bool {
        self.expects_response
    }
    fn inferred(&self) -> bool {
        self.inferred
    }
    fn resynced(&self) -> bool {
        self.resynced
    }
    fn malformed(&self) -> bool {
        self.decode_error.is_some()
    }
    fn warned(&self) -> bool {
        self.decode_warning.is_some()
    }
    fn also(&self) -> Option<&Also> {
        self.also.as_deref()
    }
}

/// A parsed filter expression; the empty filter matches every message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    expr: Option<Expr>,
    /// The names of the captures read ([`Filter::set_captures`]).
    captures: Vec<String>,
}

/// Why a filter expression does not parse, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError {
    /// 0-based character (not byte) index into the input.
    pub column: usize,
    /// What was expected, and what was found instead.
    pub message: String,
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "col {}: {}", self.column, self.message)
    }
}

impl std::error::Error for FilterError {}

impl Filter {
    /// Parses `input`; empty or whitespace-only input matches everything.
    pub fn parse(input: &str) -> Result<Filter, FilterError> {
        let (toks, end) = lex(input)?;
        if toks.is_empty() {
            return Ok(Filter::default());
        }
        let mut p = Parser {
            toks,
            pos: 0,
            end,
            depth: 0,
        };
        let expr = p.parse_or()?;
        if let Some(t) = p.peek() {
            let message = if t.tok == Tok::RParen {
                "unmatched ')': no '(' before it".to_string()
            } else {
                format!("expected 'and' or 'or', found '{}'", t.text)
            };
            return Err(error(t.col, message));
        }
        Ok(Filter {
            expr: Some(expr),
            captures: Vec::new(),
        })
    }

    /// The names of the captures read, in order: what `capture` tests (a
    /// message's [`Facts::capture`] is its place in them).
    pub fn set_captures(&mut self, names: &[String]) {
        self.captures = names.to_vec();
    }

    /// Whether message `m` passes; `peer` is its paired message, if any.
    ///
    /// For a request, the response-side predicates (latency, throttle, error)
    /// are evaluated against `peer`, its response.
    pub fn matches<M: Facts>(&self, m: &M, peer: Option<&M>) -> bool {
        self.matches_with(m, peer, &Tree::none(), &Tree::none())
    }

    /// [`Filter::matches`] with the trees of the message and its peer, for
    /// the predicates that read fields ([`Filter::needs_tree`]): each is
    /// decoded only if a predicate gets to it.
    pub fn matches_with<M: Facts>(
        &self,
        m: &M,
        peer: Option<&M>,
        tree: &Tree<'_>,
        peer_tree: &Tree<'_>,
    ) -> bool {
        let ctx = Ctx {
            m,
            peer,
            tree,
            peer_tree,
            captures: &self.captures,
        };
        self.expr.as_ref().is_none_or(|e| e.matches(&ctx))
    }

    /// Whether some predicate reads a message's fields (a field path,
    /// `partition`, `group`, `records`): then [`Filter::matches_with`]
    /// needs the messages' trees.
    pub fn needs_tree(&self) -> bool {
        self.expr.as_ref().is_some_and(Expr::needs_tree)
    }

    /// The tree of `r` for [`Filter::matches_with`], from its bytes, when
    /// the filter reads fields and `r` holds its bytes; else none.
    pub fn tree_of<'a>(&self, r: &'a kafkashark::analyzer::MessageRecord) -> Tree<'a> {
        if !self.needs_tree() || r.raw.bytes.is_empty() {
            return Tree::none();
        }
        let opts = self.decode_options();
        Tree::new(move || {
            let d = kafkashark::analyzer::redecode(&r.info, &r.raw, &opts);
            Some((d, r.raw.bytes.clone()))
        })
    }

    /// How to decode the trees [`Filter::matches_with`] reads: record sets
    /// to their batch headers, to their records only where a path goes
    /// into them.
    pub fn decode_options(&self) -> DecodeOptions {
        DecodeOptions {
            records_headers_only: !self.expr.as_ref().is_some_and(Expr::reads_records),
            ..DecodeOptions::default()
        }
    }

    /// True for the filter that matches everything (empty input).
    pub fn is_empty(&self) -> bool {
        self.expr.is_none()
    }
}

/// The canonical text of a filter: `Filter::parse` of it gives the same filter.
impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.expr.as_ref().map_or(Ok(()), |e| write!(f, "{e}"))
    }
}

fn error(column: usize, message: impl Into<String>) -> FilterError {
    FilterError {
        column,
        message: message.into(),
    }
}

// ---------------------------------------------------------------- the tree

#[derive(Clone, Debug, PartialEq, Eq)]
enum Expr {
    Or(Vec<Expr>),
    And(Vec<Expr>),
    Not(Box<Expr>),
    Pred(Pred),
}

/// A comparison operator, as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `~`: substring.
    Tilde,
}

impl Op {
    fn symbol(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Tilde => "~",
        }
    }

    fn compare(self, lhs: i128, rhs: i128) -> bool {
        match self {
            Op::Eq => lhs == rhs,
            Op::Ne => lhs != rhs,
            Op::Lt => lhs < rhs,
            Op::Le => lhs <= rhs,
            Op::Gt => lhs > rhs,
            Op::Ge => lhs >= rhs,
            Op::Tilde => false,
        }
    }
}

/// One test on a message.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Pred {
    /// A field with a number: api key, error code, durations in
    /// nanoseconds, sizes in bytes.
    Num(Field, Op, i64),
    /// A field with a text: client, client id, broker, topic.
    Text(Field, Op, String),
    Kind(Op, Kind),
    Throttled,
    LongPoll,
    AnyError,
    Unpaired,
    Inferred,
    /// Seen at another capture point too.
    Also,
    Resynced,
    Malformed,
    Warning,
    NoResponse,
    /// A field path, alone (the field is there) or compared.
    Path(Box<Path>, Option<(Op, Lit)>),
}

/// A predicate that takes an operator and a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Api,
    Version,
    Kind,
    Client,
    ClientId,
    Broker,
    Stream,
    Corr,
    Frame,
    Size,
    Topic,
    Latency,
    Hol,
    Service,
    Rtt,
    Throttle,
    Error,
    Partition,
    Group,
    Records,
    Capture,
    AlsoLatency,
}

/// What a field's value is ([`Type::expects`] says it in words): how it is
/// written, which operators it takes, how it is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Type {
    Api,
    Error,
    Kind,
    Integer,
    Size,
    Duration,
    Text,
    Topic,
    Group,
}

/// Every field, in the order of [`Field`]'s variants: its names (shown as the
/// first; the others are aliases), its type, and an example for messages.
const FIELDS: [(Field, &[&str], Type, &str); 22] = [
    (Field::Api, &["api"], Type::Api, "api=Produce"),
    (Field::Version, &["version", "v"], Type::Integer, "v>=12"),
    (Field::Kind, &["kind"], Type::Kind, "kind=request"),
    (Field::Client, &["client"], Type::Text, "client=10.0.0.7"),
    (
        Field::ClientId,
        &["client_id"],
        Type::Text,
        "client_id=rdkafka",
    ),
    (Field::Broker, &["broker"], Type::Text, "broker=:9093"),
    (Field::Stream, &["stream"], Type::Integer, "stream=3"),
    (
        Field::Corr,
        &["corr", "correlation_id"],
        Type::Integer,
        "corr=42",
    ),
    (Field::Frame, &["frame"], Type::Integer, "frame>=100"),
    (Field::Size, &["size", "len"], Type::Size, "size>100kB"),
    (Field::Topic, &["topic"], Type::Topic, "topic=orders-*"),
    (Field::Latency, &["latency"], Type::Duration, "latency>50ms"),
    (Field::Hol, &["hol", "hol_wait"], Type::Duration, "hol>5ms"),
    (Field::Service, &["service"], Type::Duration, "service>50ms"),
    (Field::Rtt, &["rtt"], Type::Duration, "rtt>1ms"),
    (
        Field::Throttle,
        &["throttle"],
        Type::Duration,
        "throttle>100ms",
    ),
    (
        Field::Error,
        &["error"],
        Type::Error,
        "error=NOT_LEADER_OR_FOLLOWER",
    ),
    (
        Field::Partition,
        &["partition"],
        Type::Integer,
        "partition=3",
    ),
    (Field::Group, &["group"], Type::Group, "group=billing-*"),
    (Field::Records, &["records"], Type::Integer, "records>100"),
    (Field::Capture, &["capture"], Type::Text, "capture=broker-1"),
    (
        Field::AlsoLatency,
        &["also_latency"],
        Type::Duration,
        "also_latency>50ms",
    ),
];

/// Every flag (a predicate written alone) other than api names; a flag
/// shows as the last of its names.
const FLAGS: &[(&str, Pred)] = &[
    ("request", Pred::Kind(Op::Eq, Kind::Request)),
    ("response", Pred::Kind(Op::Eq, Kind::Response)),
    ("throttled", Pred::Throttled),
    ("long_poll", Pred::LongPoll),
    ("longpoll", Pred::LongPoll),
    ("error", Pred::AnyError),
    ("unpaired", Pred::Unpaired),
    ("inferred", Pred::Inferred),
    ("also", Pred::Also),
    ("resync", Pred::Resynced),
    ("resynced", Pred::Resynced),
    ("malformed", Pred::Malformed),
    ("warning", Pred::Warning),
    ("acks0", Pred::NoResponse),
    ("noresponse", Pred::NoResponse),
];

fn flag(lower: &str) -> Option<Pred> {
    FLAGS
        .iter()
        .find(|(n, _)| *n == lower)
        .map(|(_, p)| p.clone())
}

impl Field {
    fn from_word(lower: &str) -> Option<Field> {
        FIELDS.iter().find(|r| r.1.contains(&lower)).map(|r| r.0)
    }

    /// Every field name and alias, for suggestions.
    fn names() -> impl Iterator<Item = &'static str> {
        FIELDS.iter().flat_map(|r| r.1.iter().copied())
    }

    /// Its name as shown: the first of its names.
    fn name(self) -> &'static str {
        FIELDS[self as usize].1[0]
    }

    fn ty(self) -> Type {
        FIELDS[self as usize].2
    }

    fn example(self) -> &'static str {
        FIELDS[self as usize].3
    }

    /// Parses the value text `v`, which starts at column `col` after `lead`.
    fn value(self, op: Op, v: &str, col: usize, lead: &str) -> Result<Pred, FilterError> {
        let ty = self.ty();
        let n = match ty {
            Type::Api => named(v, col, "api", api_by_name, apis().iter().map(|a| a.1))?.into(),
            Type::Error => {
                let names = (-1..=MAX_ERROR_CODE).filter_map(error_name);
                named(v, col, "error name", error_code, names)?.into()
            }
            Type::Integer => v
                .parse()
                .map_err(|_| ty.expected(col, lead, &format!(", found '{v}'")))?,
            Type::Size | Type::Duration => scaled(v, col, lead, ty)?,
            Type::Text | Type::Topic | Type::Group => {
                return Ok(Pred::Text(self, op, v.to_string()))
            }
            Type::Kind => {
                return match v.to_ascii_lowercase().as_str() {
                    "request" => Ok(Pred::Kind(op, Kind::Request)),
                    "response" => Ok(Pred::Kind(op, Kind::Response)),
                    _ => Err(error(
                        col,
                        format!("expected 'request' or 'response', found '{v}'"),
                    )),
                }
            }
        };
        Ok(Pred::Num(self, op, n))
    }
}

impl Type {
    fn ops(self) -> &'static [Op] {
        match self {
            Type::Api | Type::Error | Type::Kind => &[Op::Eq, Op::Ne],
            Type::Text | Type::Topic | Type::Group => &[Op::Eq, Op::Ne, Op::Tilde],
            Type::Integer | Type::Size | Type::Duration => {
                &[Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge]
            }
        }
    }

    /// What its value looks like, for "expected …" messages.
    fn expects(self) -> &'static str {
        match self {
            Type::Api => "an api name or key (like Produce or 0)",
            Type::Error => "an error name or code (like NOT_LEADER_OR_FOLLOWER or 6)",
            Type::Kind => "'request' or 'response'",
            Type::Integer => "an integer",
            Type::Size => "a size (like 100000, 64KiB or 1MB)",
            Type::Duration => "a duration (like 50ms, 200us or 1s)",
            Type::Text => "a text (quote it if it has spaces)",
            Type::Topic => "a topic name (may hold * wildcards)",
            Type::Group => "a group id (may hold * wildcards)",
        }
    }

    /// "expected <a value of this type> after '<lead>'", then `found` (what came instead).
    fn expected(self, col: usize, lead: &str, found: &str) -> FilterError {
        expected(self.expects(), col, lead, found)
    }
}

/// "expected `what` after '<lead>'", then `found` (what came instead).
fn expected(what: &str, col: usize, lead: &str, found: &str) -> FilterError {
    error(col, format!("expected {what} after '{lead}'{found}"))
}

// ---------------------------------------------------------------- values

/// Size suffixes, matched case-insensitively; the empty suffix means bytes.
const SIZE_UNITS: &[(&str, u128)] = &[
    ("", 1),
    ("b", 1),
    ("kb", 1_000),
    ("kib", 1 << 10),
    ("mb", 1_000_000),
    ("mib", 1 << 20),
    ("gb", 1_000_000_000),
    ("gib", 1 << 30),
];

/// Duration suffixes in nanoseconds; the empty suffix means milliseconds.
const DURATION_UNITS: &[(&str, u128)] = &[
    ("", 1_000_000),
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
];

/// A non-negative decimal number with a unit suffix (`1.5MB`, `50ms`), in the
/// base units of `ty` (a size or a duration).
fn scaled(v: &str, col: usize, lead: &str, ty: Type) -> Result<i64, FilterError> {
    let (units, list) = match ty {
        Type::Size => (SIZE_UNITS, "B, kB, KiB, MB, MiB, GB or GiB"),
        _ => (DURATION_UNITS, "ns, us, ms or s"),
    };
    let split = v
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
        .map_or(v.len(), |(i, _)| i);
    let (number, unit) = v.split_at(split);
    let Some((mantissa, scale)) = decimal(number) else {
        return Err(ty.expected(col, lead, &format!(", found '{v}'")));
    };
    let lower = unit.to_lowercase();
    let Some(factor) = units.iter().find(|(u, _)| *u == lower).map(|(_, f)| *f) else {
        return Err(error(
            col + number.chars().count(),
            format!("unknown unit '{unit}': expected {list}"),
        ));
    };
    let too_large = || error(col, format!("'{v}' is too large"));
    let divisor = 10u128.checked_pow(scale).ok_or_else(too_large)?;
    let scaled = mantissa.checked_mul(factor).ok_or_else(too_large)?;
    // Round to the nearest base unit: `1.5ns` is 2ns.
    let rounded = scaled.checked_add(divisor / 2).ok_or_else(too_large)? / divisor;
    i64::try_from(rounded).map_err(|_| too_large())
}

/// `digits[.digits]` as (all digits as an integer, number of fraction digits).
fn decimal(s: &str) -> Option<(u128, u32)> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if (int.is_empty() && frac.is_empty()) || frac.contains('.') {
        return None;
    }
    let mut mantissa: u128 = 0;
    for c in int.chars().chain(frac.chars()) {
        let d = c.to_digit(10)?;
        mantissa = mantissa.checked_mul(10)?.checked_add(u128::from(d))?;
    }
    let scale = u32::try_from(frac.len()).ok()?;
    Some((mantissa, scale))
}

/// Lowercase without `_` and `-`, so `api_versions` finds `ApiVersions`.
fn normalize(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// (key, name, normalized name) of every api Kafka defines.
fn apis() -> &'static [(i16, &'static str, String)] {
    static APIS: OnceLock<Vec<(i16, &'static str, String)>> = OnceLock::new();
    APIS.get_or_init(|| {
        (0..=MAX_API_KEY)
            .filter_map(|k| api_name(k).map(|n| (k, n, normalize(n))))
            .collect()
    })
}

/// The words a filter can use that start with `prefix` (any case): field
/// names and their aliases, flags, `and` / `or` / `not` and Kafka's api
/// names; sorted, each once. A prefix with a `.`, or one that only a body
/// or header name fits (`ProduceR`), is a field path's: its completions
/// are the paths one name longer, ending in `.` where that name has fields.
/// The TUI's Tab completes with them.
pub fn completions(prefix: &str) -> Vec<String> {
    if prefix.contains('.') {
        return paths::complete(prefix);
    }
    let p = prefix.to_ascii_lowercase();
    let mut words: Vec<String> = FIELDS
        .iter()
        .flat_map(|(_, names, _, _)| names.iter().copied())
        .chain(FLAGS.iter().map(|(n, _)| *n))
        .chain(["and", "or", "not"])
        .chain(apis().iter().map(|(_, n, _)| *n))
        .filter(|w| w.to_ascii_lowercase().starts_with(&p))
        .map(String::from)
        .collect();
    // Body names where no word fits (`ProduceR`, not `Produ`).
    if words.is_empty() {
        words = paths::complete(prefix);
    }
    words.sort_unstable();
    words.dedup();
    words
}

fn api_by_name(word: &str) -> Option<i16> {
    let n = normalize(word);
    apis()
        .iter()
        .find(|(_, _, norm)| *norm == n)
        .map(|(k, _, _)| *k)
}

/// A number, or a name `by_name` knows (an unknown one is an "unknown `what`"
/// error suggesting the nearest of `names`).
fn named<'a>(
    v: &str,
    col: usize,
    what: &str,
    by_name: fn(&str) -> Option<i16>,
    names: impl Iterator<Item = &'a str>,
) -> Result<i16, FilterError> {
    if let Ok(n) = v.parse::<i16>() {
        return Ok(n);
    }
    by_name(v).ok_or_else(|| {
        let hint = did_you_mean(v, names);
        error(col, format!("unknown {what} '{v}'{hint}"))
    })
}

/// `"; did you mean 'X'?"` for the nearest candidate, or nothing if none is close.
fn did_you_mean<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    let w = word.to_lowercase();
    let chars = w.chars().count();
    if chars == 0 || chars > 64 {
        return String::new();
    }
    let limit = (chars / 3).clamp(1, 3);
    candidates
        // Optimal string alignment: an adjacent transposition is one edit,
        // so `prodcue` is one edit from `produce`.
        .map(|c| (strsim::osa_distance(&w, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        // The first of the nearest.
        .min_by_key(|(d, _)| *d)
        .map_or_else(String::new, |(_, c)| format!("; did you mean '{c}'?"))
}

/// `*` matches any run of characters (including none); everything else itself.
fn glob(pattern: &str, text: &str) -> bool {
    let Some((head, tail)) = pattern.split_once('*') else {
        return pattern == text;
    };
    // `head*middle*last`: the ends anchored, each part of the middle found
    // leftmost in what remains (leaving the most text for the parts after it).
    let (middle, last) = tail.rsplit_once('*').unwrap_or(("", tail));
    let Some(rest) = text.strip_prefix(head).and_then(|r| r.strip_suffix(last)) else {
        return false;
    };
    middle
        .split('*')
        .try_fold(rest, |r, part| r.split_once(part).map(|(_, after)| after))
        .is_some()
}

fn contains_ci(hay: &str, needle: &str) -> bool {
    hay.to_lowercase().contains(&needle.to_lowercase())
}

// ---------------------------------------------------------------- lexer

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    LParen,
    RParen,
    /// `!`
    Bang,
    /// `&&`
    AndAnd,
    /// `||`
    OrOr,
    Op(Op),
    Word(String),
    Quoted(String),
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    /// 0-based character index of its first character.
    col: usize,
    /// As written, for messages.
    text: String,
}

fn is_word_char(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '(' | ')' | '&' | '|' | '!' | '=' | '<' | '>' | '~' | '"')
}

/// The tokens of `input`, and its length in characters.
fn lex(input: &str) -> Result<(Vec<Token>, usize), FilterError> {
    let chars: Vec<char> = input.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let col = i;
        let next = chars.get(i + 1).copied();
        let (tok, len) = match (c, next) {
            (c, _) if c.is_whitespace() => {
                i += 1;
                continue;
            }
            ('(', _) => (Tok::LParen, 1),
            (')', _) => (Tok::RParen, 1),
            ('&', Some('&')) => (Tok::AndAnd, 2),
            ('&', _) => return Err(error(col, "expected '&&' or 'and', found a single '&'")),
            ('|', Some('|')) => (Tok::OrOr, 2),
            ('|', _) => return Err(error(col, "expected '||' or 'or', found a single '|'")),
            ('!', Some('=')) => (Tok::Op(Op::Ne), 2),
            ('!', _) => (Tok::Bang, 1),
            ('=', Some('=')) => (Tok::Op(Op::Eq), 2),
            ('=', _) => (Tok::Op(Op::Eq), 1),
            ('<', Some('=')) => (Tok::Op(Op::Le), 2),
            ('<', _) => (Tok::Op(Op::Lt), 1),
            ('>', Some('=')) => (Tok::Op(Op::Ge), 2),
            ('>', _) => (Tok::Op(Op::Gt), 1),
            ('~', _) => (Tok::Op(Op::Tilde), 1),
            ('"', _) => {
                let mut s = String::new();
                let mut j = i + 1;
                loop {
                    // A `\` takes the character after it as it is.
                    let at = j + usize::from(chars.get(j) == Some(&'\\'));
                    match chars.get(at) {
                        Some('"') if at == j => break,
                        Some(&ch) => s.push(ch),
                        None => {
                            return Err(error(col, "unterminated string: expected a closing '\"'"))
                        }
                    }
                    j = at + 1;
                }
                (Tok::Quoted(s), j + 1 - i)
            }
            _ => {
                let len = chars
                    .iter()
                    .skip(i)
                    .take_while(|c| is_word_char(**c))
                    .count();
                (Tok::Word(chars.iter().skip(i).take(len).collect()), len)
            }
        };
        let text = chars.iter().skip(i).take(len).collect();
        toks.push(Token { tok, col, text });
        i += len.max(1);
    }
    Ok((toks, chars.len()))
}

// ---------------------------------------------------------------- parser

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    /// Length of the input in characters: the column of "end of input".
    end: usize,
    depth: usize,
}

fn is_keyword(t: &Token, word: &str) -> bool {
    matches!(&t.tok, Tok::Word(w) if w.eq_ignore_ascii_case(word))
}

/// Words that join predicates; as values they must be quoted.
fn is_connective(t: &Token) -> bool {
    is_keyword(t, "and") || is_keyword(t, "or") || is_keyword(t, "not")
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.pos)
    }

    fn bump(&mut self) {
        self.pos += 1;
    }

    /// Consumes the next token if `pred` holds for it.
    fn eat(&mut self, pred: impl Fn(&Token) -> bool) -> bool {
        let hit = self.peek().is_some_and(pred);
        if hit {
            self.bump();
        }
        hit
    }

    fn enter(&mut self) -> Result<(), FilterError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let col = self.peek().map_or(self.end, |t| t.col);
            return Err(error(
                col,
                format!("expression nested too deeply (more than {MAX_DEPTH} levels)"),
            ));
        }
        Ok(())
    }

    fn parse_or(&mut self) -> Result<Expr, FilterError> {
        self.parse_joined(Tok::OrOr, "or", Parser::parse_and, Expr::Or)
    }

    fn parse_and(&mut self) -> Result<Expr, FilterError> {
        self.parse_joined(Tok::AndAnd, "and", Parser::parse_not, Expr::And)
    }

    /// One `item`, or several joined by `sym` or `word` into `make` of them.
    fn parse_joined(
        &mut self,
        sym: Tok,
        word: &str,
        item: fn(&mut Parser) -> Result<Expr, FilterError>,
        make: fn(Vec<Expr>) -> Expr,
    ) -> Result<Expr, FilterError> {
        let mut items = vec![item(self)?];
        while self.eat(|t| t.tok == sym || is_keyword(t, word)) {
            items.push(item(self)?);
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            make(items)
        })
    }

    fn parse_not(&mut self) -> Result<Expr, FilterError> {
        if self.eat(|t| t.tok == Tok::Bang || is_keyword(t, "not")) {
            self.enter()?;
            let inner = self.parse_not()?;
            self.depth -= 1;
            return Ok(Expr::Not(Box::new(inner)));
        }
        self.parse_atom()
    }

    /// "expected a predicate" where the next token is, naming what came before.
    fn expected_predicate(&self) -> FilterError {
        let prev = self
            .pos
            .checked_sub(1)
            .and_then(|i| self.toks.get(i))
            .map(|t| t.text.as_str());
        match (self.peek(), prev) {
            (Some(t), _) => error(t.col, format!("expected a predicate, found '{}'", t.text)),
            (None, Some(p)) => error(self.end, format!("expected a predicate after '{p}'")),
            (None, None) => error(self.end, "expected a predicate"),
        }
    }

    fn parse_atom(&mut self) -> Result<Expr, FilterError> {
        let Some(t) = self.peek().cloned() else {
            return Err(self.expected_predicate());
        };
        match t.tok {
            Tok::LParen => {
                self.bump();
                self.enter()?;
                if let Some(close) = self.peek().filter(|n| n.tok == Tok::RParen) {
                    return Err(error(close.col, "expected a predicate inside '( )'"));
                }
                let inner = self.parse_or()?;
                match self.peek() {
                    Some(n) if n.tok == Tok::RParen => self.bump(),
                    Some(n) => {
                        return Err(error(
                            n.col,
                            format!("expected 'and', 'or' or ')', found '{}'", n.text),
                        ))
                    }
                    None => {
                        return Err(error(
                            self.end,
                            format!("expected ')' to close the '(' at col {}", t.col),
                        ))
                    }
                }
                self.depth -= 1;
                Ok(inner)
            }
            Tok::Word(ref w) if !is_connective(&t) => {
                Ok(Expr::Pred(self.parse_predicate(w, t.col)?))
            }
            _ => Err(self.expected_predicate()),
        }
    }

    /// A predicate starting with `word` (not yet consumed) at column `col`.
    fn parse_predicate(&mut self, word: &str, col: usize) -> Result<Pred, FilterError> {
        self.bump();
        let lower = word.to_lowercase();
        let op = self.peek().and_then(|t| match t.tok {
            Tok::Op(op) => Some((op, t.col)),
            _ => None,
        });
        if paths::is_path(word) {
            return self.parse_path(word, col, op);
        }
        let Some((op, op_col)) = op else {
            if let Some(p) = flag(&lower) {
                return Ok(p);
            }
            if let Some(key) = api_by_name(word) {
                return Ok(Pred::Num(Field::Api, Op::Eq, key.into()));
            }
            if let Some(f) = Field::from_word(&lower) {
                return Err(error(
                    col + word.chars().count(),
                    format!("expected an operator after '{word}' (like {})", f.example()),
                ));
            }
            let candidates = FLAGS
                .iter()
                .map(|(n, _)| *n)
                .chain(Field::names())
                .chain(apis().iter().map(|(_, n, _)| *n));
            let hint = did_you_mean(word, candidates);
            return Err(error(col, format!("unknown api or keyword '{word}'{hint}")));
        };
        let Some(field) = Field::from_word(&lower) else {
            if flag(&lower).is_some() || api_by_name(word).is_some() {
                return Err(error(
                    op_col,
                    format!("'{word}' takes no operator or value: write it alone"),
                ));
            }
            let hint = did_you_mean(word, Field::names());
            return Err(error(col, format!("unknown field '{word}'{hint}")));
        };
        self.bump();
        let lead = format!("{word}{}", op.symbol());
        let ty = field.ty();
        check_op(op, op_col, word, ty.ops())?;
        let (value, value_col) = self.value(&lead, ty.expects())?;
        field.value(op, &value, value_col, &lead)
    }

    /// The value after `lead` (a word or a quoted text) and its column.
    fn value(&mut self, lead: &str, expects: &str) -> Result<(String, usize), FilterError> {
        let got = match self.peek() {
            None => return Err(expected(expects, self.end, lead, "")),
            Some(t) => match &t.tok {
                Tok::Word(v) if !is_connective(t) => (v.clone(), t.col),
                Tok::Quoted(v) => (v.clone(), t.col + 1),
                _ => {
                    let why = if is_connective(t) {
                        " (quote it to use it as a value)"
                    } else {
                        ""
                    };
                    let found = format!(", found '{}'{why}", t.text);
                    return Err(expected(expects, t.col, lead, &found));
                }
            },
        };
        self.bump();
        Ok(got)
    }

    /// A field path `word` at `col`, alone or compared (`op` is next).
    fn parse_path(
        &mut self,
        word: &str,
        col: usize,
        op: Option<(Op, usize)>,
    ) -> Result<Pred, FilterError> {
        let path = paths::resolve(word, col)?;
        let Some((op, op_col)) = op else {
            return Ok(Pred::Path(Box::new(path), None));
        };
        let (ops, expects): (&[Op], &str) = match path.holds {
            paths::Holds::Int => (
                &[Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::Tilde],
                "an integer",
            ),
            paths::Holds::Text => (&[Op::Eq, Op::Ne, Op::Tilde], "a text"),
            paths::Holds::Fields => {
                return Err(error(
                    op_col,
                    format!("'{path}' holds fields: compare one of them, or write it alone to test that it is there"),
                ))
            }
        };
        check_op(op, op_col, word, ops)?;
        self.bump();
        let lead = format!("{word}{}", op.symbol());
        let (v, value_col) = self.value(&lead, expects)?;
        let lit = match path.holds {
            paths::Holds::Text => Lit::Text(v),
            _ => match v.parse::<i128>() {
                Ok(n) => Lit::Int(n),
                Err(_) if path.error_code => {
                    let names = (-1..=MAX_ERROR_CODE).filter_map(error_name);
                    Lit::Int(named(&v, value_col, "error name", error_code, names)?.into())
                }
                // The meaning shown beside an integer (`attributes~gzip`).
                Err(_) if matches!(op, Op::Eq | Op::Ne | Op::Tilde) => Lit::Text(v),
                Err(_) => {
                    let found = format!(", found '{v}'");
                    return Err(expected(expects, value_col, &lead, &found));
                }
            },
        };
        Ok(Pred::Path(Box::new(path), Some((op, lit))))
    }
}

/// An error at `col` unless `op` is one of `ops`, the operators `word` takes.
fn check_op(op: Op, col: usize, word: &str, ops: &[Op]) -> Result<(), FilterError> {
    if ops.contains(&op) {
        return Ok(());
    }
    let allowed: Vec<&str> = ops.iter().map(|o| o.symbol()).collect();
    Err(error(
        col,
        format!(
            "'{}' does not apply to '{word}': use {}",
            op.symbol(),
            allowed.join(" ")
        ),
    ))
}

// ---------------------------------------------------------------- evaluation

/// The message that carries the response-side facts: `m` itself if it is a
/// response, else its paired response.
fn response_of<'a, M: Facts>(m: &'a M, peer: Option<&'a M>) -> Option<&'a M> {
    match m.kind() {
        Kind::Response => Some(m),
        Kind::Request => peer.filter(|p| p.kind() == Kind::Response),
    }
}

/// Responses carry no client id: theirs is their request's.
fn client_id_of<'a, M: Facts>(m: &'a M, peer: Option<&'a M>) -> Option<&'a str> {
    m.client_id().or_else(|| peer.and_then(|p| p.client_id()))
}

/// A message's own topics, or its peer's when it names none.
pub fn topics_of<'a, M: Facts>(m: &'a M, peer: Option<&'a M>) -> &'a [std::sync::Arc<str>] {
    match peer {
        Some(p) if m.topics().is_empty() => p.topics(),
        _ => m.topics(),
    }
}

/// Text tests: `=` and `~` are substring, `!=` is "no substring"; all case-insensitive.
fn text_matches<'a>(op: Op, needle: &str, mut hay: impl Iterator<Item = &'a str>) -> bool {
    match op {
        Op::Ne => hay.all(|h| !contains_ci(h, needle)),
        _ => hay.any(|h| contains_ci(h, needle)),
    }
}

/// What a predicate is tested on: a message, its peer, and their trees.
struct Ctx<'a, 't, 'u, M> {
    m: &'a M,
    peer: Option<&'a M>,
    tree: &'a Tree<'t>,
    peer_tree: &'a Tree<'u>,
    /// The names of the captures read.
    captures: &'a [String],
}

impl<M: Facts> Ctx<'_, '_, '_, M> {
    /// Values a tree alias reads from the message's tree, or from its
    /// peer's when the message has none.
    fn own_or_peer<T>(&self, read: impl Fn(&Tree<'_>, Option<i16>) -> Option<Vec<T>>) -> Vec<T> {
        match read(self.tree, self.m.api_key()) {
            Some(v) if !v.is_empty() => v,
            _ => self
                .peer
                .and_then(|p| read(self.peer_tree, p.api_key()))
                .unwrap_or_default(),
        }
    }
}

impl Expr {
    fn matches<M: Facts>(&self, ctx: &Ctx<'_, '_, '_, M>) -> bool {
        match self {
            Expr::Or(items) => items.iter().any(|e| e.matches(ctx)),
            Expr::And(items) => items.iter().all(|e| e.matches(ctx)),
            Expr::Not(inner) => !inner.matches(ctx),
            Expr::Pred(p) => p.matches(ctx),
        }
    }

    fn needs_tree(&self) -> bool {
        match self {
            Expr::Or(items) | Expr::And(items) => items.iter().any(Expr::needs_tree),
            Expr::Not(inner) => inner.needs_tree(),
            Expr::Pred(p) => p.needs_tree(),
        }
    }

    /// Whether a path goes into the records of a record set.
    fn reads_records(&self) -> bool {
        match self {
            Expr::Or(items) | Expr::And(items) => items.iter().any(Expr::reads_records),
            Expr::Not(inner) => inner.reads_records(),
            Expr::Pred(Pred::Path(p, _)) => p.reads_records(),
            Expr::Pred(_) => false,
        }
    }
}

impl Pred {
    fn needs_tree(&self) -> bool {
        matches!(
            self,
            Pred::Path(..)
                | Pred::Num(Field::Partition | Field::Records, ..)
                | Pred::Text(Field::Group, ..)
        )
    }

    fn matches<M: Facts>(&self, ctx: &Ctx<'_, '_, '_, M>) -> bool {
        let (m, peer) = (ctx.m, ctx.peer);
        match self {
            Pred::Num(field, op, n) => field.matches_number(*op, i128::from(*n), ctx),
            Pred::Text(field, op, s) => {
                let s = s.as_str();
                match field {
                    Field::Client => {
                        let addr = m.client_text();
                        let id = client_id_of(m, peer);
                        text_matches(*op, s, std::iter::once(&*addr).chain(id))
                    }
                    Field::ClientId => client_id_of(m, peer)
                        .is_some_and(|id| text_matches(*op, s, std::iter::once(id))),
                    Field::Broker => text_matches(*op, s, std::iter::once(&*m.broker_text())),
                    Field::Capture => {
                        let name = ctx.captures.get(usize::from(m.capture()));
                        text_matches(*op, s, name.map(String::as_str).into_iter())
                    }
                    Field::Group => {
                        let groups = ctx.own_or_peer(paths::groups);
                        match op {
                            Op::Eq => groups.iter().any(|g| glob(s, g)),
                            Op::Ne => !groups.is_empty() && !groups.iter().any(|g| glob(s, g)),
                            _ => groups.iter().any(|g| contains_ci(g, s)),
                        }
                    }
                    _ => {
                        let topics = topics_of(m, peer);
                        match op {
                            Op::Eq => topics.iter().any(|t| glob(s, t)),
                            Op::Ne => !topics.is_empty() && !topics.iter().any(|t| glob(s, t)),
                            _ => topics.iter().any(|t| contains_ci(t, s)),
                        }
                    }
                }
            }
            Pred::Kind(op, kind) => (m.kind() == *kind) != (*op == Op::Ne),
            Pred::Throttled => response_of(m, peer)
                .and_then(|r| r.throttle_time_ms())
                .is_some_and(|t| t > 0),
            Pred::LongPoll => response_of(m, peer).is_some_and(|r| r.long_poll()),
            Pred::AnyError => response_of(m, peer).is_some_and(|r| !r.error_codes().is_empty()),
            Pred::Unpaired => !m.paired() && (m.kind() == Kind::Response || m.expects_response()),
            Pred::Inferred => m.inferred(),
            Pred::Also => m.also().is_some(),
            Pred::Resynced => m.resynced(),
            Pred::Malformed => m.malformed(),
            Pred::Warning => m.warned(),
            Pred::NoResponse => m.kind() == Kind::Request && !m.expects_response(),
            Pred::Path(path, cmp) => {
                let own = (m.kind(), m.api_key());
                let other = peer.map(|p| (p.kind(), p.api_key()));
                match path.side(own, other) {
                    Some(true) => path.matches(ctx.tree, cmp.as_ref()),
                    Some(false) => path.matches(ctx.peer_tree, cmp.as_ref()),
                    None => false,
                }
            }
        }
    }
}

impl Field {
    /// `field op n` of a field with a number (see [`Pred::Num`]).
    fn matches_number<M: Facts>(self, op: Op, n: i128, ctx: &Ctx<'_, '_, '_, M>) -> bool {
        let (m, peer) = (ctx.m, ctx.peer);
        let have = match self {
            Field::Frame => {
                // A message spans first_frame..=frame; test the span, not one end.
                let (a, b) = (i128::from(m.first_frame()), i128::from(m.frame()));
                let (lo, hi) = (a.min(b), a.max(b));
                return match op {
                    Op::Eq => lo <= n && n <= hi,
                    Op::Ne => !(lo <= n && n <= hi),
                    Op::Lt | Op::Le => op.compare(lo, n),
                    Op::Gt | Op::Ge | Op::Tilde => op.compare(hi, n),
                };
            }
            Field::Error => {
                return response_of(m, peer).is_some_and(|r| {
                    // error_codes holds only non-zero codes: `error=NONE` means "none of them".
                    let has = match i16::try_from(n) {
                        Ok(0) => r.error_codes().is_empty(),
                        Ok(code) => r.error_codes().contains(&code),
                        Err(_) => false,
                    };
                    has == (op == Op::Eq)
                });
            }
            Field::Api => m.api_key().map(i128::from),
            Field::Version => m.api_version().map(i128::from),
            Field::Stream => Some(i128::from(m.stream())),
            Field::Corr => m.correlation_id().map(i128::from),
            Field::Size => Some(i128::from(m.length())),
            // The parts of a response's latency; a request's are its response's.
            Field::Latency | Field::Hol | Field::Service => response_of(m, peer)
                .and_then(|r| match self {
                    Field::Hol => r.hol_wait_ns(),
                    Field::Service => r.service_ns(),
                    _ => r.latency_ns(),
                })
                .map(i128::from),
            Field::Rtt => m.rtt_ns().map(i128::from),
            // The latency at the other capture point; a request's is its response's.
            Field::AlsoLatency => response_of(m, peer)
                .and_then(|r| r.also())
                .and_then(|a| a.latency_ns)
                .map(i128::from),
            Field::Throttle => response_of(m, peer)
                .and_then(|r| r.throttle_time_ms())
                .map(|ms| i128::from(ms) * 1_000_000),
            Field::Partition => {
                let parts = ctx.own_or_peer(|t, _| partitions(t));
                return match op {
                    Op::Ne => !parts.is_empty() && parts.iter().all(|&p| p != n),
                    _ => parts.iter().any(|&p| op.compare(p, n)),
                };
            }
            Field::Records => {
                let count = |t: &Tree<'_>, _| records(t).map(|r| vec![r]);
                ctx.own_or_peer(count).first().copied()
            }
            Field::Kind
            | Field::Client
            | Field::ClientId
            | Field::Broker
            | Field::Topic
            | Field::Group
            | Field::Capture => None,
        };
        have.is_some_and(|h| op.compare(h, n))
    }
}

// ---------------------------------------------------------------- display

impl Expr {
    /// How tightly it binds: `or` loosest, then `and`, then the rest.
    fn binding(&self) -> u8 {
        match self {
            Expr::Or(_) => 0,
            Expr::And(_) => 1,
            Expr::Not(_) | Expr::Pred(_) => 2,
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Parenthesize exactly where the parser would otherwise group differently:
        // an item that binds no tighter than its list, an `and` or `or` after `not`.
        let (items, sep) = match self {
            Expr::Or(items) => (items, " or "),
            Expr::And(items) => (items, " and "),
            Expr::Not(inner) if inner.binding() < 2 => return write!(f, "not ({inner})"),
            Expr::Not(inner) => return write!(f, "not {inner}"),
            Expr::Pred(p) => return write!(f, "{p}"),
        };
        for (i, e) in items.iter().enumerate() {
            let sep = if i > 0 { sep } else { "" };
            if e.binding() <= self.binding() {
                write!(f, "{sep}({e})")?;
            } else {
                write!(f, "{sep}{e}")?;
            }
        }
        Ok(())
    }
}

/// A text quoted for the filter language: `"…"`, with `"` and `\` escaped.
pub fn quote(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            o.push('\\');
        }
        o.push(c);
    }
    o.push('"');
    o
}

/// A duration in nanoseconds, in the largest unit that holds it whole: `50ms`, `1500us`.
fn duration(ns: i64) -> String {
    [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)]
        .into_iter()
        .find(|(_, per)| ns % per == 0)
        .map_or_else(
            || format!("{ns}ns"),
            |(unit, per)| format!("{}{unit}", ns / per),
        )
}

impl fmt::Display for Pred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((name, _)) = FLAGS.iter().rev().find(|(_, p)| p == self) {
            return f.write_str(name);
        }
        match self {
            Pred::Num(Field::Api, Op::Eq, k) => match i16::try_from(*k).ok().and_then(api_name) {
                Some(name) => f.write_str(name),
                None => write!(f, "api={k}"),
            },
            Pred::Num(field, op, n) => {
                write!(f, "{}{}", field.name(), op.symbol())?;
                let code = i16::try_from(*n).ok();
                let name = match field.ty() {
                    Type::Api => code.and_then(api_name),
                    Type::Error => code.and_then(error_name),
                    Type::Duration => return f.write_str(&duration(*n)),
                    _ => None,
                };
                match name {
                    Some(name) => f.write_str(name),
                    None => write!(f, "{n}"),
                }
            }
            Pred::Text(field, op, s) => write!(f, "{}{}{}", field.name(), op.symbol(), quote(s)),
            Pred::Path(path, None) => write!(f, "{path}"),
            Pred::Path(path, Some((op, lit))) => write!(f, "{path}{}{lit}", op.symbol()),
            Pred::Kind(op, k) => {
                let k = match k {
                    Kind::Request => "request",
                    Kind::Response => "response",
                };
                write!(f, "kind{}{k}", op.symbol())
            }
            // Written by their names (`FLAGS`).
            _ => Ok(()),
        }
    }
}

// ---------------------------------------------------------------- listing

/// The filter language's words, as `kafkashark fields` lists them: each
/// field with its aliases, operators, value and an example; each word used
/// alone; Kafka's api names. Made from the tables the parser reads.
pub fn listing() -> String {
    use std::fmt::Write as _;
    let mut s = String::from("Fields with an operator (docs/filter.md):\n");
    let rows: Vec<[String; 4]> = FIELDS
        .iter()
        .map(|(_, names, ty, example)| {
            let ops: Vec<&str> = ty.ops().iter().map(|o| o.symbol()).collect();
            [
                names.join(", "),
                ops.join(" "),
                ty.expects().to_string(),
                (*example).to_string(),
            ]
        })
        .collect();
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0), width(1), width(2));
    for [names, ops, value, example] in &rows {
        let _ = writeln!(s, "  {names:w0$}  {ops:w1$}  {value:w2$}  {example}");
    }
    s.push_str("\nWords on their own:\n  ");
    let mut flags: Vec<&str> = FLAGS.iter().map(|(n, _)| *n).collect();
    flags.sort_unstable();
    s.push_str(&flags.join(", "));
    s.push_str(", and an api name\n");
    s.push_str(
        "\nField paths: a body (ProduceRequest, FetchResponse, ...) or header (RequestHeader,\n\
         ResponseHeader) and the names under it, joined by '.' (`kafkashark fields API` lists\n\
         an api's); under a records field, RecordBatch, Record, Header and Message and their fields.\n\
         Alone, the field is there; with = != < <= > >= ~, one of its values compares:\n\
         \x20 ProduceRequest.TopicData.PartitionData.Index=3\n\
         \x20 FetchResponse.Responses.Partitions.ErrorCode=OFFSET_OUT_OF_RANGE\n\
         \x20 RequestHeader.client_id~rdkafka\n\
         \x20 ProduceRequest.TopicData.PartitionData.Records.RecordBatch.Record.key=alice\n",
    );
    s.push_str("\nApi names (any case, `_` and `-` ignored), with their keys:\n");
    for (key, name, _) in apis() {
        let _ = writeln!(s, "  {key:>3}  {name}");
    }
    s
}

/// The api key `word` names: a key, or an api name as the filter reads it;
/// else why not, with the nearest name.
pub fn api_key(word: &str) -> Result<i16, String> {
    named(word, 0, "api", api_by_name, apis().iter().map(|a| a.1))
        .map_err(|e| e.message)
        .and_then(|k| match api_name(k) {
            Some(_) => Ok(k),
            None => Err(format!("unknown api key {k}")),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafkashark::kafka::schema::ApiKey;
    use kafkashark::vocab::Timestamp;

    // ------------------------------------------------------------ fixtures

    /// A Produce v9 request, stream 3, corr 42, frames 8..=10, 2048 bytes.
    fn request() -> MessageInfo {
        MessageInfo {
            index: 0,
            frame: 10,
            first_frame: 8,
            ts: Timestamp::new(100, 0),
            first_ts: Timestamp::new(100, 0),
            stream: 3,
            client: "10.0.0.5:50123".parse().unwrap(),
            broker: "10.0.0.1:9092".parse().unwrap(),
            kind: Kind::Request,
            api_key: Some(ApiKey::PRODUCE),
            api_version: Some(9),
            correlation_id: Some(42),
            length: 2048,
            client_id: Some("billing-app".into()),
            paired: true,
            peer: Some(1),
            inferred: false,
            expects_response: true,
            latency_ns: None,
            hol_wait_ns: None,
            rtt: None,
            fetch: None,
            throttle_time_ms: None,
            error_codes: Vec::new(),
            decode_error: None,
            decode_warning: None,
            resynced: false,
            skipped_before: 0,
            topics: ["orders-eu".into()].into_iter().collect(),
            capture: 0,
            also: None,
        }
    }

    /// Its response: 75 ms later, throttled 150 ms, NOT_LEADER_OR_FOLLOWER (6).
    fn response() -> MessageInfo {
        MessageInfo {
            index: 1,
            frame: 12,
            first_frame: 12,
            kind: Kind::Response,
            length: 60,
            client_id: None,
            peer: Some(0),
            expects_response: false,
            latency_ns: Some(75_000_000),
            hol_wait_ns: None,
            fetch: None,
            throttle_time_ms: Some(150),
            error_codes: vec![6],
            ..request()
        }
    }

    /// A clean, unthrottled Fetch v12 response whose request was not captured.
    fn lone_fetch_response() -> MessageInfo {
        MessageInfo {
            index: 5,
            frame: 30,
            first_frame: 30,
            stream: 4,
            kind: Kind::Response,
            api_key: Some(ApiKey::FETCH),
            api_version: Some(12),
            correlation_id: Some(7),
            length: 150_000,
            client_id: None,
            paired: false,
            peer: None,
            inferred: true,
            expects_response: false,
            latency_ns: None,
            hol_wait_ns: None,
            fetch: None,
            throttle_time_ms: Some(0),
            error_codes: Vec::new(),
            topics: ["payments".into()].into_iter().collect(),
            ..request()
        }
    }

    fn parse(f: &str) -> Filter {
        Filter::parse(f).unwrap_or_else(|e| panic!("{f:?}: {e}"))
    }

    /// Whether `f` matches `m` with no peer.
    fn hit(f: &str, m: &MessageInfo) -> bool {
        parse(f).matches(m, None)
    }

    fn err(f: &str) -> (usize, String) {
        match Filter::parse(f) {
            Ok(x) => panic!("{f:?} parsed as {x:?}"),
            Err(e) => (e.column, e.message),
        }
    }

    fn assert_err(f: &str, column: usize, needle: &str) {
        let (c, m) = err(f);
        assert!(m.contains(needle), "{f:?}: message {m:?} lacks {needle:?}");
        assert_eq!(c, column, "{f:?}: column, message {m:?}");
    }

    // ------------------------------------------------------------ predicates

    #[test]
    fn empty_input_matches_everything() {
        for f in ["", "   ", "\t\n"] {
            let filter = parse(f);
            assert!(filter.is_empty());
            assert!(filter.matches(&request(), None));
            assert!(filter.matches(&lone_fetch_response(), None));
            assert_eq!(filter.to_string(), "");
        }
        assert!(!parse("produce").is_empty());
    }

    #[test]
    fn api_by_bare_name_case_insensitive() {
        let req = request();
        for f in [
            "produce",
            "Produce",
            "PRODUCE",
            "api=produce",
            "api=0",
            "api==Produce",
        ] {
            assert!(hit(f, &req), "{f}");
        }
        for f in ["fetch", "Metadata", "ApiVersions", "api=1", "api!=produce"] {
            assert!(!hit(f, &req), "{f}");
        }
        let fetch = lone_fetch_response();
        assert!(hit("Fetch", &fetch));
        assert!(hit("api!=0", &fetch));
        assert!(hit(
            "api_versions",
            &MessageInfo {
                api_key: Some(ApiKey::API_VERSIONS),
                ..request()
            }
        ));
        // An unknown api matches neither `=` nor `!=`.
        let unknown = MessageInfo {
            api_key: None,
            ..response()
        };
        assert!(!hit("produce", &unknown));
        assert!(!hit("api!=produce", &unknown));
    }

    #[test]
    fn version_comparisons() {
        let req = request(); // v9
        for f in [
            "v=9",
            "version=9",
            "v!=8",
            "v<10",
            "v<=9",
            "v>8",
            "v>=9",
            "V>=9",
        ] {
            assert!(hit(f, &req), "{f}");
        }
        for f in ["v=8", "v!=9", "v<9", "v<=8", "v>9", "v>=10"] {
            assert!(!hit(f, &req), "{f}");
        }
        assert!(!hit(
            "v>=0",
            &MessageInfo {
                api_version: None,
                ..req
            }
        ));
    }

    #[test]
    fn request_response_and_kind() {
        let (req, resp) = (request(), response());
        assert!(hit("request", &req) && !hit("request", &resp));
        assert!(hit("response", &resp) && !hit("response", &req));
        assert!(hit("kind=request", &req) && !hit("kind=request", &resp));
        assert!(hit("kind=Response", &resp) && !hit("kind=response", &req));
        assert!(hit("kind!=response", &req) && !hit("kind!=response", &resp));
    }

    #[test]
    fn client_matches_address_or_client_id() {
        let req = request();
        for f in [
            "client=10.0.0.5",
            "client=:50123",
            "client=10.0.0.5:50123",
            "client=billing",
            "client~BILLING",
            "client!=other",
            "client=\"billing-app\"",
        ] {
            assert!(hit(f, &req), "{f}");
        }
        for f in [
            "client=10.0.0.6",
            "client=9092",
            "client!=billing",
            "client=\"my app\"",
        ] {
            assert!(!hit(f, &req), "{f}");
        }
        let spaced = MessageInfo {
            client_id: Some("my app".into()),
            ..request()
        };
        assert!(hit("client=\"my app\"", &spaced));
        assert!(hit("client_id=\"MY APP\"", &spaced));
    }

    #[test]
    fn client_id_and_broker() {
        let req = request();
        assert!(hit("client_id=billing", &req));
        assert!(hit("client_id~app", &req));
        assert!(
            !hit("client_id=10.0.0.5", &req),
            "client_id ignores the address"
        );
        assert!(hit("client_id!=orders", &req));
        assert!(!hit(
            "client_id=x",
            &MessageInfo {
                client_id: None,
                ..request()
            }
        ));
        assert!(hit("broker=10.0.0.1:9092", &req));
        assert!(hit("broker=:9092", &req));
        assert!(!hit("broker=10.0.0.5", &req));
        assert!(hit("broker!=:9093", &req));
        // A response carries no client id: its request's counts.
        let (req, resp) = (request(), response());
        assert!(!parse("client_id=billing").matches(&resp, None));
        assert!(parse("client_id=billing").matches(&resp, Some(&req)));
        assert!(parse("client=billing").matches(&resp, Some(&req)));
    }

    #[test]
    fn stream_corr_frame() {
        let req = request(); // stream 3, corr 42, frames 8..=10
        for f in [
            "stream=3",
            "stream>2",
            "stream<=3",
            "corr=42",
            "correlation_id=42",
            "corr>=42",
            "corr!=41",
            "frame=8",
            "frame=9",
            "frame=10",
            "frame>9",
            "frame<9",
            "frame>=10",
            "frame<=8",
            "frame!=11",
        ] {
            assert!(hit(f, &req), "{f}");
        }
        for f in [
            "stream=4", "stream<3", "corr=41", "corr<42", "frame=7", "frame=11", "frame>10",
            "frame<8", "frame!=9",
        ] {
            assert!(!hit(f, &req), "{f}");
        }
        assert!(!hit(
            "corr>=0",
            &MessageInfo {
                correlation_id: None,
                ..req
            }
        ));
        assert!(hit(
            "corr=-1",
            &MessageInfo {
                correlation_id: Some(-1),
                ..request()
            }
        ));
    }

    #[test]
    fn size_with_units() {
        let req = request(); // 2048 bytes
        for f in [
            "size=2048",
            "len=2048",
            "size>2kB",
            "size>2KB",
            "size=2KiB",
            "size=2kib",
            "size<0.01MB",
            "size<1MiB",
            "size>=2048B",
            "size<1GB",
            "size<1GiB",
            "size>2.047KB",
        ] {
            assert!(hit(f, &req), "{f}");
        }
        for f in ["size>2KiB", "size<2kB", "size>100000", "size!=2048"] {
            assert!(!hit(f, &req), "{f}");
        }
        assert!(hit("size>100000", &lone_fetch_response()));
    }

    #[test]
    fn topic_exact_glob_substring() {
        let req = request(); // orders-eu
        for f in [
            "topic=orders-eu",
            "topic=orders-*",
            "topic=*-eu",
            "topic=*",
            "topic=o*s-e*",
            "topic=\"orders-eu\"",
            "topic~ders",
            "topic~ORDERS",
            "topic!=payments",
        ] {
            assert!(hit(f, &req), "{f}");
        }
        for f in [
            "topic=orders",
            "topic=Orders-eu",
            "topic=*-us",
            "topic~pay",
            "topic!=orders-*",
        ] {
            assert!(!hit(f, &req), "{f}");
        }
        let none = MessageInfo {
            topics: Default::default(),
            ..response()
        };
        assert!(!hit("topic=*", &none));
        assert!(
            !hit("topic!=x", &none),
            "no topic at all is not 'a topic other than x'"
        );
        // A message naming no topic borrows its peer's.
        assert!(parse("topic=orders-eu").matches(&none, Some(&request())));
    }

    #[test]
    fn latency_with_units() {
        let resp = response(); // 75 ms
        for f in [
            "latency>50ms",
            "latency>50",
            "latency=75ms",
            "latency<1s",
            "latency>=75000us",
            "latency<=75000000ns",
            "latency>0.07s",
            "latency<75.5",
            "latency!=1ms",
            "latency>74999µs",
        ] {
            assert!(hit(f, &resp), "{f}");
        }
        for f in [
            "latency>75ms",
            "latency<50ms",
            "latency>=1s",
            "latency<200us",
            "latency=74",
        ] {
            assert!(!hit(f, &resp), "{f}");
        }
        assert!(hit("latency=75", &resp), "a plain number is milliseconds");
        assert!(
            !hit("latency>0", &lone_fetch_response()),
            "no latency, no match"
        );
        assert!(!hit("latency!=5ms", &lone_fetch_response()));
        assert!(hit("not latency>0", &lone_fetch_response()));
    }

    #[test]
    fn throttle() {
        let resp = response(); // 150 ms
        assert!(hit("throttled", &resp));
        assert!(hit("throttle>100ms", &resp));
        assert!(hit("throttle=150", &resp));
        assert!(hit("throttle=0.15s", &resp));
        assert!(!hit("throttle>150ms", &resp));
        let clean = lone_fetch_response(); // 0 ms
        assert!(!hit("throttled", &clean));
        assert!(hit("throttle=0", &clean));
        assert!(!hit("throttle>0", &clean));
        let no_field = MessageInfo {
            throttle_time_ms: None,
            ..response()
        };
        assert!(!hit("throttled", &no_field));
        assert!(!hit("throttle<1s", &no_field));
    }

    /// A paired Fetch v12 response: 503.1 ms, of which 500.2 ms behind the
    /// previous response; no records after a MaxWaitMs of 500 ms (`records`
    /// bytes makes it one that returned data).
    fn fetch_response(records: u64) -> MessageInfo {
        MessageInfo {
            api_key: Some(ApiKey::FETCH),
            api_version: Some(12),
            latency_ns: Some(503_100_000),
            hol_wait_ns: Some(500_200_000),
            fetch: Some(kafkashark::analyzer::FetchWait {
                asked: kafkashark::pairing::FetchAsk {
                    max_wait_ms: 500,
                    min_bytes: 1,
                },
                record_bytes: records,
            }),
            throttle_time_ms: Some(0),
            error_codes: Vec::new(),
            ..response()
        }
    }

    #[test]
    fn latency_parts_hol_and_service() {
        let queued = fetch_response(0); // hol 500.2 ms, service 2.9 ms
        for f in [
            "hol>500ms",
            "hol=500.2ms",
            "hol_wait>=500200us",
            "hol<1s",
            "service<3ms",
            "service=2.9",
            "service>2900us or service<2900us or service=2.9ms",
            "latency=503.1ms and hol=500.2ms and service=2.9ms",
        ] {
            assert!(hit(f, &queued), "{f}");
        }
        for f in ["hol>500.2ms", "hol<5ms", "service>2.9ms", "service>=50ms"] {
            assert!(!hit(f, &queued), "{f}");
        }
        // A response with no head-of-line wait measured: service is its latency.
        let resp = response(); // 75 ms, hol None
        assert!(hit("service=75ms", &resp));
        assert!(!hit("hol>=0", &resp), "no hol wait measured, no match");
        assert!(!hit("hol!=5ms", &resp));
        assert!(hit("not hol>0", &resp));
        // No latency: neither part.
        let lone = lone_fetch_response();
        assert!(!hit("service>=0", &lone) && !hit("hol>=0", &lone));
        // A request takes its response's parts.
        let req = request();
        assert!(!hit("service>1ms", &req));
        assert!(parse("service>50ms").matches(&req, Some(&resp)));
        assert!(parse("hol>500ms").matches(&req, Some(&queued)));
        assert!(!parse("hol>500ms").matches(&req, Some(&resp)));
    }

    #[test]
    fn long_poll_flag() {
        // Service 2.9 ms of MaxWaitMs 500: returned early, not a long-poll.
        assert!(!hit("longpoll", &fetch_response(0)));
        let waited = MessageInfo {
            hol_wait_ns: Some(0),
            ..fetch_response(0)
        };
        assert!(waited.long_poll());
        for f in ["longpoll", "LongPoll", "long_poll", "fetch and longpoll"] {
            assert!(hit(f, &waited), "{f}");
        }
        assert!(!hit("not longpoll", &waited));
        let data = MessageInfo {
            hol_wait_ns: Some(0),
            ..fetch_response(4096)
        };
        assert!(!hit("longpoll", &data), "records came back");
        assert!(hit("service>500ms and not longpoll", &data));
        assert!(!hit("longpoll", &response()), "not a Fetch");
        // A request is a long-poll when its response is.
        assert!(parse("longpoll").matches(&request(), Some(&waited)));
        assert!(!parse("longpoll").matches(&request(), Some(&data)));
        assert!(!hit("longpoll", &request()));
        assert_eq!(parse("long_poll").to_string(), "longpoll");
        assert_eq!(
            parse("hol>5 and service>=0.05s").to_string(),
            "hol>5ms and service>=50ms"
        );
        assert_err("longpoll=1", 8, "takes no operator or value");
        assert_err("hol", 3, "expected an operator after 'hol' (like hol>5ms)");
        assert_err("servise>5", 0, "did you mean 'service'?");
    }

    /// Every Kafka message of a real capture, as the analyzer gives them.
    fn capture(name: &str) -> Option<Vec<MessageInfo>> {
        use kafkashark::analyzer::{Analyzer, AnalyzerConfig, Output};
        use kafkashark::capture::{FileSource, FrameSource};
        let path = format!("{}/../captures/{name}", env!("CARGO_MANIFEST_DIR"));
        let Ok(mut src) = FileSource::open(&path) else {
            eprintln!("skipping: {path} missing");
            return None;
        };
        let mut an = Analyzer::new(AnalyzerConfig::default());
        let mut out = Vec::new();
        while let Some(f) = src.next_frame().expect("frame") {
            an.push(&f, &mut out);
        }
        an.finish(&mut out);
        let infos = out.into_iter().filter_map(|o| match o {
            Output::Message(m) => Some(m.info),
            Output::Notice(_) => None,
        });
        Some(infos.collect())
    }

    /// The frames of the messages `f` matches, each with its peer (the
    /// analyzer names a response's request; the request's response is found
    /// from it, as the TUI does).
    fn frames_matching(f: &str, infos: &[MessageInfo]) -> Vec<u64> {
        let f = parse(f);
        let mut peers: Vec<Option<&MessageInfo>> = infos
            .iter()
            .map(|i| i.peer.and_then(|p| infos.get(p as usize)))
            .collect();
        for r in infos {
            if let Some(slot) = r.peer.and_then(|p| peers.get_mut(p as usize)) {
                *slot = Some(r);
            }
        }
        infos
            .iter()
            .zip(peers)
            .filter(|(i, peer)| f.matches(*i, *peer))
            .map(|(i, _)| i.frame)
            .collect()
    }

    /// a1 (kcat's consumer group): FindCoordinator, GetTelemetrySubscriptions
    /// and ListOffsets answered after 503, 503 and 403 ms, all but a fraction
    /// of a millisecond spent behind a long-poll Fetch (tests/wire_truth.rs
    /// checks these figures against an independent reading); b6: 23 long-polls.
    #[test]
    fn latency_parts_on_real_captures() {
        let Some(a1) = capture("a1-kcat-produce-consume-group.pcap") else {
            return;
        };
        let queued = frames_matching("hol>5ms and response", &a1);
        assert_eq!(queued, [243, 245, 247]);
        let apis: Vec<_> = queued
            .iter()
            .filter_map(|&fr| a1.iter().find(|i| i.frame == fr)?.api_name())
            .collect();
        assert_eq!(
            apis,
            [
                "FindCoordinator",
                "GetTelemetrySubscriptions",
                "ListOffsets"
            ]
        );
        // Their requests come along, and nothing else waited a millisecond.
        assert_eq!(frames_matching("hol>5ms", &a1).len(), 6);
        assert_eq!(
            frames_matching("hol>1ms", &a1).len(),
            8,
            "FindCoordinator in frame 151 waited 2.4 ms"
        );
        assert_eq!(frames_matching("hol=502.944ms", &a1), [234, 243]);
        // Every a1 connection opened in the capture: its handshake round
        // trip is 13 to 31 µs (captures/a1-….wire.tsv: ack − syn).
        assert_eq!(
            frames_matching("rtt>=13us and rtt<=31us", &a1).len(),
            a1.len()
        );
        assert!(frames_matching("rtt<13us or rtt>31us", &a1).is_empty());
        assert!(!frames_matching("rtt=31us", &a1).is_empty());
        assert_eq!(
            frames_matching("latency>400ms and service<1ms and response", &a1),
            queued
        );
        // Seven long-polls; the Fetches that were slow otherwise returned data.
        let polls = frames_matching("longpoll and response", &a1);
        assert_eq!(polls, [177, 241, 249, 253, 299, 301, 335]);
        assert_eq!(frames_matching("longpoll", &a1).len(), 14);
        for fr in frames_matching("service>50ms and response and not longpoll", &a1) {
            let i = a1.iter().find(|i| i.frame == fr).expect("frame");
            assert_eq!(i.api_key, Some(ApiKey::FETCH), "frame {fr}");
            assert!(i.fetch.is_some_and(|f| f.record_bytes > 0), "frame {fr}");
        }
        assert!(frames_matching("service>50ms and response", &a1).len() > polls.len());
        if let Some(b6) = capture("b6-consumer-lag.pcap") {
            assert_eq!(frames_matching("longpoll and response", &b6).len(), 23);
            assert_eq!(frames_matching("longpoll and request", &b6).len(), 23);
        }
    }

    #[test]
    fn errors_by_name_and_code() {
        let resp = response(); // [6]
        for f in [
            "error",
            "error=NOT_LEADER_OR_FOLLOWER",
            "error=not_leader_or_follower",
            "error=6",
            "error=\"NOT_LEADER_OR_FOLLOWER\"",
            "error!=UNKNOWN_TOPIC_OR_PARTITION",
            "error!=NONE",
            "error!=0",
        ] {
            assert!(hit(f, &resp), "{f}");
        }
        for f in [
            "error=3",
            "error=UNKNOWN_TOPIC_OR_PARTITION",
            "error!=6",
            "error=NONE",
        ] {
            assert!(!hit(f, &resp), "{f}");
        }
        let clean = lone_fetch_response();
        assert!(!hit("error", &clean));
        assert!(hit("error=NONE", &clean));
        assert!(hit("error!=6", &clean));
        assert!(!hit("error=6", &clean));
        // A request without its response has no error facts.
        assert!(!hit("error", &request()));
        assert!(!hit("error!=6", &request()));
        assert!(!hit("error=NONE", &request()));
        assert!(hit(
            "error=-1",
            &MessageInfo {
                error_codes: vec![-1],
                ..response()
            }
        ));
    }

    #[test]
    fn requests_use_their_response_for_response_side_predicates() {
        let (req, resp) = (request(), response());
        for f in [
            "latency>50ms",
            "throttled",
            "throttle>100ms",
            "error",
            "error=6",
            "error!=3",
        ] {
            let filter = parse(f);
            assert!(filter.matches(&req, Some(&resp)), "{f} with peer");
            assert!(filter.matches(&resp, Some(&req)), "{f} on the response");
            assert!(!filter.matches(&req, None), "{f} without peer");
        }
        // The peer is consulted only for response-side facts.
        assert!(!parse("response").matches(&req, Some(&resp)));
        assert!(!parse("v=10").matches(
            &req,
            Some(&MessageInfo {
                api_version: Some(10),
                ..resp.clone()
            })
        ));
        // A request never borrows facts from a peer that is not a response.
        assert!(!parse("latency>0").matches(&req, Some(&req)));
    }

    #[test]
    fn flags() {
        let (req, resp, lone) = (request(), response(), lone_fetch_response());
        assert!(hit("unpaired", &lone));
        assert!(!hit("unpaired", &resp));
        assert!(!hit("unpaired", &req));
        let waiting = MessageInfo {
            paired: false,
            peer: None,
            ..request()
        };
        assert!(hit("unpaired", &waiting));
        let acks0 = MessageInfo {
            paired: false,
            peer: None,
            expects_response: false,
            ..request()
        };
        assert!(!hit("unpaired", &acks0), "acks=0 expects nothing");
        assert!(hit("acks0", &acks0) && hit("noresponse", &acks0));
        assert!(!hit("acks0", &req) && !hit("noresponse", &resp));

        assert!(hit("inferred", &lone) && !hit("inferred", &resp));
        let resynced = MessageInfo {
            resynced: true,
            skipped_before: 12,
            ..request()
        };
        assert!(hit("resync", &resynced) && hit("resynced", &resynced) && !hit("resync", &req));
        let bad = MessageInfo {
            decode_error: Some("short at 12".into()),
            ..response()
        };
        assert!(hit("malformed", &bad) && !hit("malformed", &resp));
        let warned = MessageInfo {
            decode_warning: Some(kafkashark::kafka::DecodeWarning::Trailing {
                offset: 27,
                len: 3,
                kind: Kind::Request,
            }),
            ..request()
        };
        assert!(hit("warning", &warned) && !hit("malformed", &warned));
        assert!(!hit("warning", &req) && !hit("warning", &bad));
        assert!(hit("UNPAIRED", &lone), "keywords are case-insensitive");
    }

    // ------------------------------------------------------------ structure

    #[test]
    fn precedence_not_binds_tighter_than_and_than_or() {
        // not a and b or c  ==  ((not a) and b) or c
        let f = parse("not produce and request or fetch");
        assert_eq!(f.to_string(), "not Produce and request or Fetch");
        let produce_req = request();
        let metadata_req = MessageInfo {
            api_key: Some(ApiKey::METADATA),
            ..request()
        };
        let fetch_resp = lone_fetch_response();
        let metadata_resp = MessageInfo {
            api_key: Some(ApiKey::METADATA),
            ..response()
        };
        assert!(!f.matches(&produce_req, None));
        assert!(f.matches(&metadata_req, None));
        assert!(f.matches(&fetch_resp, None));
        assert!(!f.matches(&metadata_resp, None));
        // Symbols and words are interchangeable.
        assert_eq!(parse("!produce && request || fetch"), f);
        assert_eq!(parse("NOT produce AND request OR fetch"), f);
        // a or b and c  ==  a or (b and c)
        let g = parse("fetch or produce and response");
        assert!(g.matches(&fetch_resp, None));
        assert!(!g.matches(&produce_req, None));
        assert!(g.matches(&response(), None));
    }

    #[test]
    fn parentheses_group() {
        let f = parse("not (produce and request) and (fetch or metadata)");
        assert_eq!(
            f.to_string(),
            "not (Produce and request) and (Fetch or Metadata)"
        );
        assert!(f.matches(&lone_fetch_response(), None));
        assert!(!f.matches(&request(), None));
        let g = parse("(fetch or produce) and response");
        assert!(!g.matches(&request(), None));
        assert!(g.matches(&response(), None));
        assert_eq!(parse("((produce))"), parse("produce"));
        assert_eq!(parse("not not produce").to_string(), "not not Produce");
        assert!(parse("not not produce").matches(&request(), None));
    }

    #[test]
    fn display_is_canonical() {
        for (input, shown) in [
            ("v>=12", "version>=12"),
            ("api!=0", "api!=Produce"),
            ("api=999", "api=999"),
            ("client=\"my \\\"app\\\"\"", "client=\"my \\\"app\\\"\""),
            ("latency>50", "latency>50ms"),
            ("latency>1.5s", "latency>1500ms"),
            ("latency<200us", "latency<200us"),
            ("latency<7ns", "latency<7ns"),
            ("size>1KiB", "size>1024"),
            ("error=6", "error=NOT_LEADER_OR_FOLLOWER"),
            ("error!=9999", "error!=9999"),
            ("kind=request", "request"),
            ("kind!=request", "kind!=request"),
            ("acks0", "noresponse"),
            (
                "(api_versions or fetch) or produce",
                "(ApiVersions or Fetch) or Produce",
            ),
        ] {
            let f = parse(input);
            assert_eq!(f.to_string(), shown, "{input}");
            assert_eq!(parse(shown), f, "{shown} round-trips");
        }
    }

    #[test]
    fn field_paths_print_as_the_tree_spells_them() {
        for (input, shown) in [
            (
                "producerequest.topicdata.partitiondata.index==3",
                "ProduceRequest.TopicData.PartitionData.Index=3",
            ),
            (
                "FetchResponse.Responses.Partitions.ErrorCode=NOT_LEADER_OR_FOLLOWER",
                "FetchResponse.Responses.Partitions.ErrorCode=6",
            ),
            (
                "RequestHeader.CLIENT_ID~rdkafka",
                "RequestHeader.client_id~\"rdkafka\"",
            ),
            (
                "ProduceRequest.TopicData.PartitionData.Records.RecordBatch.attributes~gzip",
                "ProduceRequest.TopicData.PartitionData.Records.RecordBatch.attributes~\"gzip\"",
            ),
            (
                "JoinGroupRequest.GroupId=\"a\"",
                "JoinGroupRequest.GroupId=\"a\"",
            ),
            // A string field takes a number as its text.
            (
                "JoinGroupRequest.GroupId=12",
                "JoinGroupRequest.GroupId=\"12\"",
            ),
            ("partition!=3", "partition!=3"),
            ("group=billing-*", "group=\"billing-*\""),
            ("records>100", "records>100"),
        ] {
            let f = parse(input);
            assert_eq!(f.to_string(), shown, "{input}");
            assert_eq!(parse(shown), f, "{shown} round-trips");
            assert!(f.needs_tree(), "{input}");
        }
        assert!(!parse("produce and latency>5ms").needs_tree());
        // Only paths into records decode them.
        let o = parse("records>1 and ProduceRequest.Acks=1").decode_options();
        assert!(o.records && o.records_headers_only);
        let o =
            parse("not ProduceRequest.TopicData.PartitionData.Records.RecordBatch.Record.key=a")
                .decode_options();
        assert!(o.records && !o.records_headers_only);
    }

    /// The tree of a message is decoded when a predicate reads it, once,
    /// and not for a message the predicates before it already decided.
    #[test]
    fn trees_are_decoded_only_when_a_predicate_reads_them() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../captures/messages/produce-v12-request-minimal.hex"
        ))
        .unwrap();
        let bytes: Vec<u8> = (text.split_whitespace())
            .map(|h| u8::from_str_radix(h, 16).unwrap())
            .collect();
        let bytes = bytes::Bytes::from(bytes);
        let decodes = std::cell::Cell::new(0);
        let tree = || {
            Tree::new(|| {
                decodes.set(decodes.get() + 1);
                let d =
                    kafkashark::kafka::decode::decode_request(&bytes, &DecodeOptions::default());
                Some((d, bytes.clone()))
            })
        };
        let m = request();
        let test = |f: &str| parse(f).matches_with(&m, None, &tree(), &Tree::none());
        // The seed's request: Produce v12, acks 0, topic "", partition 0,
        // an empty batch with CRC 0x2ce64e55.
        assert!(!test("fetch and partition=0"));
        assert_eq!(decodes.get(), 0);
        assert!(test("produce and (partition=0 or records>5) and records=0"));
        assert_eq!(decodes.get(), 1);
        assert!(!test("partition=1"));
        assert!(test("partition!=1"));
        assert!(test(
            "ProduceRequest.Acks=0 and ProduceRequest.Acks<1 and not ProduceRequest.Acks=-1"
        ));
        assert!(test("ProduceRequest.TopicData.Name=\"\""));
        let batch = "ProduceRequest.TopicData.PartitionData.Records.RecordBatch";
        assert!(test(&format!("{batch}.crc={}", 0x2ce6_4e55_u32)));
        assert!(test(&format!(
            "{batch}.baseSequence=-1 and {batch}.recordsCount=0"
        )));
        assert!(!test(&format!("{batch}.Record")));
        assert!(test("ProduceRequest.TransactionalId"));
        assert!(test("RequestHeader.request_api_version=12"));
        assert!(!test("ResponseHeader.correlation_id=0"));
        assert!(!test("ProduceResponse.Responses"));
        // Without a tree, the predicates that read one match nothing.
        assert!(!parse("partition=0").matches(&m, None));
        assert!(parse("not partition=0").matches(&m, None));
    }

    /// docs/filter.md's table of error messages is what the parser says.
    #[test]
    fn the_docs_error_table_is_what_parse_says() {
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/filter.md"))
                .unwrap();
        let rows: Vec<(String, usize, String)> = doc
            .lines()
            .skip_while(|l| !l.starts_with("| filter | column | message |"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
                let unquote = |c: &str| c.trim_matches('`').to_string();
                (
                    unquote(cells[0]),
                    cells[1].parse().unwrap(),
                    unquote(cells[2]),
                )
            })
            .collect();
        assert!(rows.len() >= 20, "{rows:?}");
        for (filter, column, message) in rows {
            assert_eq!(err(&filter), (column, message), "{filter}");
        }
    }

    #[test]
    fn examples_from_the_docs_parse() {
        for f in [
            "produce and latency>50ms",
            "error=NOT_LEADER_OR_FOLLOWER or throttled",
            "not (metadata or apiversions) and client=\"my app\"",
            "topic=orders-* and size>1MiB",
            "api-versions",
            "response and produce",
            "error and fetch",
            "produce and acks0",
            "api=Fetch",
            "api!=18",
            "kind!=response",
            "client=:50412",
            "client_id=\"my app\"",
            "broker=:9093",
            "corr=1234",
            "frame>=500 and frame<600",
            "size>=1MiB",
            "topic=*-dlq",
            "topic~audit",
            "latency>=1.5s",
            "throttle>100ms",
            "error!=6",
            "error=0",
            "longpoll",
            "fetch and not longpoll and service>50ms",
            "hol>5ms",
            "service>50ms",
            "hol_wait>=500us",
        ] {
            parse(f);
        }
        assert_eq!(
            parse("v>=12 and not (throttled or latency>1.5s)").to_string(),
            "version>=12 and not (throttled or latency>1500ms)"
        );
    }

    #[test]
    fn fields_table_follows_the_variants() {
        for (i, (field, names, ..)) in FIELDS.iter().enumerate() {
            assert_eq!(*field as usize, i, "{names:?}");
            assert!(!names.is_empty());
        }
    }

    // ------------------------------------------------------------ errors

    #[test]
    fn unknown_word_with_suggestion() {
        let (c, m) = err("prodcue");
        assert_eq!(c, 0);
        assert_eq!(
            m,
            "unknown api or keyword 'prodcue'; did you mean 'Produce'?"
        );
        assert_err("request and Fecth", 12, "did you mean 'Fetch'?");
        assert_err(
            "latncy>5",
            0,
            "unknown field 'latncy'; did you mean 'latency'?",
        );
        let (_, m) = err("zzzzzzzz");
        assert_eq!(m, "unknown api or keyword 'zzzzzzzz'");
        assert_eq!(
            Filter::parse("prodcue").unwrap_err().to_string(),
            "col 0: unknown api or keyword 'prodcue'; did you mean 'Produce'?"
        );
    }

    #[test]
    fn missing_value() {
        assert_err(
            "latency>",
            8,
            "expected a duration (like 50ms, 200us or 1s) after 'latency>'",
        );
        assert_err("produce and v>=", 15, "expected an integer after 'v>='");
        assert_err("latency> and produce", 9, "found 'and'");
        assert_err("topic=)", 6, "expected a topic name");
        assert_err(
            "latency",
            7,
            "expected an operator after 'latency' (like latency>50ms)",
        );
    }

    #[test]
    fn bad_values() {
        assert_err(
            "latency>5parsecs",
            9,
            "unknown unit 'parsecs': expected ns, us, ms or s",
        );
        assert_err("latency>-5ms", 8, "expected a duration");
        assert_err("latency>ms", 8, "expected a duration");
        assert_err("latency>1.2.3", 8, "expected a duration");
        assert_err("size>5k", 6, "unknown unit 'k': expected B, kB, KiB");
        assert_err("size>99999999999999999999999999999999GiB", 5, "too large");
        assert_err(
            "v>=twelve",
            3,
            "expected an integer after 'v>=', found 'twelve'",
        );
        assert_err("kind=both", 5, "expected 'request' or 'response'");
        assert_err(
            "api=Prodcue",
            4,
            "unknown api 'Prodcue'; did you mean 'Produce'?",
        );
        assert_err("error=NOT_A_THING", 6, "unknown error name 'NOT_A_THING'");
        assert_err(
            "error=NOT_LEADER_OR_FOLOWER",
            6,
            "did you mean 'NOT_LEADER_OR_FOLLOWER'?",
        );
        assert_err("error=\"NOT_A_THING\"", 7, "unknown error name");
    }

    #[test]
    fn unbalanced_parentheses() {
        assert_err("(produce", 8, "expected ')' to close the '(' at col 0");
        assert_err(
            "fetch or ((produce)",
            19,
            "expected ')' to close the '(' at col 9",
        );
        assert_err("produce)", 7, "unmatched ')'");
        assert_err("()", 1, "expected a predicate inside '( )'");
        assert_err(
            "(produce fetch)",
            9,
            "expected 'and', 'or' or ')', found 'fetch'",
        );
    }

    #[test]
    fn trailing_or_misplaced_operators() {
        assert_err("produce and", 11, "expected a predicate after 'and'");
        assert_err("produce ||", 10, "expected a predicate after '||'");
        assert_err("not", 3, "expected a predicate after 'not'");
        assert_err("and produce", 0, "expected a predicate, found 'and'");
        assert_err(
            "produce and or fetch",
            12,
            "expected a predicate, found 'or'",
        );
        assert_err("produce fetch", 8, "expected 'and' or 'or', found 'fetch'");
        assert_err("=5", 0, "expected a predicate, found '='");
        assert_err("produce & fetch", 8, "found a single '&'");
        assert_err("produce | fetch", 8, "found a single '|'");
        assert_err("produce=1", 7, "'produce' takes no operator or value");
        assert_err("topic<5", 5, "'<' does not apply to 'topic': use = != ~");
        assert_err("v~1", 1, "'~' does not apply to 'v'");
        assert_err("client=\"abc", 7, "unterminated string");
        assert_err("\"x\"", 0, "expected a predicate, found '\"x\"'");
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        assert_err("topic=\"ü\" and prodcue", 14, "unknown api or keyword");
    }

    #[test]
    fn nesting_is_capped() {
        let deep = format!("{}produce{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert!(Filter::parse(&deep).is_ok());
        let deeper = format!("{}produce{}", "(".repeat(10_000), ")".repeat(10_000));
        let (_, m) = err(&deeper);
        assert!(m.contains("nested too deeply"), "{m}");
        let nots = format!("{}produce", "not ".repeat(10_000));
        let (_, m) = err(&nots);
        assert!(m.contains("nested too deeply"), "{m}");
        // Long flat chains are not nesting.
        let chain = vec!["produce"; 10_000].join(" or ");
        assert!(Filter::parse(&chain).is_ok());
    }

    // ------------------------------------------------------------ properties

    /// xorshift64*: a fixed-seed generator, so failures reproduce.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    const PIECES: &[&str] = &[
        "produce",
        "Fetch",
        "api",
        "v",
        "version",
        "kind",
        "request",
        "response",
        "client",
        "client_id",
        "broker",
        "stream",
        "corr",
        "frame",
        "size",
        "len",
        "topic",
        "latency",
        "throttle",
        "throttled",
        "error",
        "unpaired",
        "inferred",
        "resync",
        "malformed",
        "acks0",
        "and",
        "or",
        "not",
        "&&",
        "||",
        "!",
        "(",
        ")",
        "=",
        "!=",
        "<",
        "<=",
        ">",
        ">=",
        "~",
        "==",
        "\"",
        "\"my app\"",
        "\\",
        "5",
        "-1",
        "1.5",
        "50ms",
        "1s",
        "2KiB",
        "orders-*",
        "*",
        "NOT_LEADER_OR_FOLLOWER",
        "NONE",
        "6",
        "&",
        "|",
        "ü",
        "µs",
        " ",
        "  ",
        "\t",
        "x",
        "9999999999999999999999",
        ".",
        "0.0.0.0:9092",
    ];

    /// Random sequences of language fragments and arbitrary characters.
    fn random_input(rng: &mut Rng) -> String {
        let mut s = String::new();
        for _ in 0..rng.below(12) {
            if rng.below(8) == 0 {
                let c = char::from_u32(rng.next() as u32 % 0x11_0000).unwrap_or('?');
                s.push(c);
            } else {
                s.push_str(PIECES[rng.below(PIECES.len())]);
            }
            if rng.below(3) != 0 {
                s.push(' ');
            }
        }
        s
    }

    #[test]
    fn random_input_never_panics_and_display_round_trips() {
        let mut rng = Rng(0x5eed_cafe_f00d_0001);
        let samples = [request(), response(), lone_fetch_response()];
        let mut parsed = 0;
        for _ in 0..10_000 {
            let input = random_input(&mut rng);
            match Filter::parse(&input) {
                Ok(f) => {
                    parsed += 1;
                    let shown = f.to_string();
                    assert_eq!(
                        Filter::parse(&shown).as_ref(),
                        Ok(&f),
                        "{input:?} → {shown:?}"
                    );
                    for m in &samples {
                        let _ = f.matches(m, None);
                        let _ = f.matches(m, Some(&samples[1]));
                    }
                }
                Err(e) => {
                    assert!(e.column <= input.chars().count(), "{input:?}: {e}");
                    assert!(!e.message.is_empty());
                }
            }
        }
        assert!(
            parsed > 500,
            "the generator should reach valid filters ({parsed})"
        );
    }

    const VALID_PREDICATES: &[&str] = &[
        "produce",
        "ApiVersions",
        "api!=1",
        "v>=9",
        "version<3",
        "request",
        "kind!=response",
        "client=billing",
        "client~\"my app\"",
        "client_id!=x",
        "broker=:9092",
        "stream=3",
        "corr=-1",
        "frame<=9",
        "size>1.5kB",
        "len<2MiB",
        "topic=orders-*",
        "topic~EU",
        "topic!=payments",
        "latency>50ms",
        "latency<=0.5",
        "throttle>=100us",
        "throttled",
        "error",
        "error=NOT_LEADER_OR_FOLLOWER",
        "error!=NONE",
        "error=-1",
        "partition=3",
        "group!=g*",
        "records>=100",
        "ProduceRequest.TopicData.PartitionData.Index<2",
        "fetchresponse.responses.partitions.errorcode=OFFSET_OUT_OF_RANGE",
        "RequestHeader.client_id~rdkafka",
        "ProduceRequest.TopicData.PartitionData.Records.RecordBatch.Record.key=\"a b\"",
        "MetadataResponse.Topics",
        "unpaired",
        "inferred",
        "resync",
        "malformed",
        "acks0",
        "noresponse",
    ];

    /// A random well-formed expression, nested at most `depth` deep.
    fn random_valid(rng: &mut Rng, depth: usize) -> String {
        let choice = if depth == 0 { 0 } else { rng.below(5) };
        match choice {
            1 => format!("not {}", random_valid(rng, depth - 1)),
            2 => format!("({})", random_valid(rng, depth - 1)),
            3 => format!(
                "{} and {}",
                random_valid(rng, depth - 1),
                random_valid(rng, depth - 1)
            ),
            4 => format!(
                "{} || {}",
                random_valid(rng, depth - 1),
                random_valid(rng, depth - 1)
            ),
            _ => VALID_PREDICATES[rng.below(VALID_PREDICATES.len())].to_string(),
        }
    }

    #[test]
    fn random_valid_filters_parse_and_round_trip_with_the_same_meaning() {
        let mut rng = Rng(0x0dd_ba11_2024);
        let (req, resp, lone) = (request(), response(), lone_fetch_response());
        for _ in 0..3_000 {
            let input = random_valid(&mut rng, 5);
            let f = parse(&input);
            let again = parse(&f.to_string());
            assert_eq!(again, f, "{input:?}");
            for (m, peer) in [(&req, Some(&resp)), (&resp, Some(&req)), (&lone, None)] {
                assert_eq!(again.matches(m, peer), f.matches(m, peer), "{input:?}");
            }
        }
    }

    #[test]
    fn every_prefix_of_valid_filters_parses_or_errors_in_range() {
        let inputs = [
            "not (produce and v>=9) or client=\"my app\" && latency>=1.5ms || error=NONE",
            "topic=orders-* and size>1MiB and !throttled and frame<=100",
        ];
        for input in inputs {
            let chars: Vec<char> = input.chars().collect();
            for n in 0..=chars.len() {
                let prefix: String = chars.iter().take(n).collect();
                if let Err(e) = Filter::parse(&prefix) {
                    assert!(e.column <= n, "{prefix:?}: {e}");
                }
            }
        }
    }
}
