//! Differential test: kafkashark's decoder against the `kafka-protocol` crate
//! (generated from Kafka 4.1.0, an implementation independent of ours) on the
//! same bytes, for every API key and version both know, requests and responses.
//!
//! For each (api key, version, kind) the crate supports:
//! - (a) the crate's `Default` message is encoded by the crate, and must equal
//!   what our schema-driven encoder writes from the schema defaults; kafkashark
//!   decodes it (with a header and size prefix) without error and shows every
//!   default, with spans;
//! - (b) [`RANDOM_PER_TRIPLE`] random messages are written by our schema-driven encoder
//!   (`common_encoder`); the crate must decode each body completely and
//!   re-encode it byte for byte — so it read every field as we wrote it — and
//!   kafkashark must decode the whole message without error and show exactly
//!   the values and spans written.
//!
//! Versions in our tables (Kafka 4.3.0 plus the 3.9 definitions of removed
//! versions) that the crate lacks get the same checks without the crate, so
//! every api key and version we decode is exercised. The crate is used through
//! its `Request` trait: its `RequestKind`/`ResponseKind` enums sit behind the
//! `messages_enums` feature, which this workspace does not enable.

mod common_encoder;

use std::collections::HashSet;

use common_encoder::{check_spans, check_tree, encode_body, field_at, Encoded, Expect, Fill, Want};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, Message, Request, StrBytes};
use kafkashark::kafka::schema::{self, MessageDef, MessageKind};
use kafkashark::kafka::{decode_request, decode_response, DecodeOptions, Value};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Random messages per (api key, version, kind).
const RANDOM_PER_TRIPLE: usize = 20;

/// Problems kept per (api key, version, kind) before summarising the rest.
const KEEP: usize = 6;

#[derive(Default)]
struct Run {
    /// Every problem found, each naming key, version, kind and field.
    problems: Vec<String>,
    /// Defaults the crate cannot encode, with the reason.
    default_skips: Vec<String>,
    /// (key, version, kind) triples compared with the crate.
    compared: usize,
    /// Random messages checked by both decoders.
    compared_messages: usize,
    /// Default messages checked by both decoders.
    compared_defaults: usize,
    /// Triples only in our tables, checked with our encoder and decoder.
    ours_only: usize,
    /// Messages checked for those.
    ours_only_messages: usize,
    /// Those triples, as `name vN`, grouped by message.
    ours_only_list: Vec<(&'static str, Vec<i16>)>,
    /// Nodes compared with what was written: all, tagged-field entries, non-empty record sets, nulls.
    nodes: [usize; 4],
    /// Top-level scalar fields whose value the crate read was compared with
    /// the value written (and so with what kafkashark shows).
    crate_values: usize,
    /// Facts about the crate worth printing.
    notes: Vec<String>,
    /// Every triple exercised.
    exercised: HashSet<(i16, i16, bool)>,
}

fn kind_name(k: MessageKind) -> &'static str {
    match k {
        MessageKind::Request => "request",
        _ => "response",
    }
}

/// A seed per triple, so any failure reproduces on its own.
fn seed(key: i16, kind: MessageKind, v: i16) -> u64 {
    0x6b61_666b_6173_0000
        ^ ((key as u64) << 20)
        ^ (u64::from(kind == MessageKind::Response) << 16)
        ^ v as u64
}

/// A header for `def` at `v`, with the nodes kafkashark must show for it.
/// Returns the header bytes (offsets relative to byte 4 of the message), the
/// correlation id and the client id.
fn header(key: i16, kind: MessageKind, v: i16, rng: &mut StdRng) -> (Encoded, i32, Option<String>) {
    let mut h = Encoded::default();
    let corr: i32 = rng.gen();
    let put = |h: &mut Encoded, name: &str, ty: &str, bytes: &[u8], value: Value, top: &str| {
        let at = h.bytes.len();
        h.bytes.extend_from_slice(bytes);
        h.expects.push(Expect {
            path: vec![top.to_string(), name.to_string()],
            ty: ty.to_string(),
            want: Want::Is(value),
            offset: at,
            length: bytes.len(),
            opaque: false,
        });
    };
    let (top, hv, client) = if kind == MessageKind::Request {
        let hv = schema::request_header_version(key, v);
        let top = "RequestHeader";
        put(
            &mut h,
            "request_api_key",
            "int16",
            &key.to_be_bytes(),
            Value::Int(key.into()),
            top,
        );
        put(
            &mut h,
            "request_api_version",
            "int16",
            &v.to_be_bytes(),
            Value::Int(v.into()),
            top,
        );
        put(
            &mut h,
            "correlation_id",
            "int32",
            &corr.to_be_bytes(),
            Value::Int(corr.into()),
            top,
        );
        let mut client = None;
        if hv >= 1 {
            // The client id keeps its int16 length even in header v2.
            let mut b = Vec::new();
            let value = if rng.gen_ratio(1, 8) {
                b.extend_from_slice(&(-1i16).to_be_bytes());
                Value::Null
            } else {
                let s = common_encoder::text(rng, 12);
                b.extend_from_slice(&(s.len() as i16).to_be_bytes());
                b.extend_from_slice(s.as_bytes());
                client = Some(s.clone());
                Value::Str(s)
            };
            put(&mut h, "client_id", "nullable_string", &b, value, top);
        }
        if hv >= 2 {
            put(&mut h, "tagged_fields", "uvarint", &[0], Value::Int(0), top);
        }
        (top, hv, client)
    } else {
        let hv = schema::response_header_version(key, v);
        let top = "ResponseHeader";
        put(
            &mut h,
            "correlation_id",
            "int32",
            &corr.to_be_bytes(),
            Value::Int(corr.into()),
            top,
        );
        if hv >= 1 {
            put(&mut h, "tagged_fields", "uvarint", &[0], Value::Int(0), top);
        }
        (top, hv, None)
    };
    let len = h.bytes.len();
    h.expects.push(Expect {
        path: vec![top.to_string()],
        ty: format!("v{hv}"),
        want: Want::Is(Value::None),
        offset: 0,
        length: len,
        opaque: false,
    });
    (h, corr, client)
}

/// Adds the nodes of `body` to the tallies.
fn tally(run: &mut Run, body: &Encoded) {
    for e in &body.expects {
        run.nodes[0] += 1;
        match &e.want {
            Want::AnyText => run.nodes[2] += 1,
            Want::Is(Value::Text(t)) if t.starts_with("tag ") => run.nodes[1] += 1,
            Want::Is(Value::Null) => run.nodes[3] += 1,
            _ => {}
        }
    }
}

/// Frames header and body, decodes with kafkashark and compares with what was written.
fn check_kafkashark(
    def: &'static MessageDef,
    v: i16,
    hdr: &Encoded,
    corr: i32,
    client: &Option<String>,
    body: &Encoded,
) -> Vec<String> {
    let size = hdr.bytes.len() + body.bytes.len();
    let mut msg = Vec::with_capacity(size + 4);
    msg.extend_from_slice(&(size as i32).to_be_bytes());
    msg.extend_from_slice(&hdr.bytes);
    msg.extend_from_slice(&body.bytes);

    let mut expects = vec![
        Expect {
            path: Vec::new(),
            ty: format!("message v{v}"),
            want: Want::Is(Value::None),
            offset: 0,
            length: msg.len(),
            opaque: false,
        },
        Expect {
            path: vec!["Frame".into()],
            ty: String::new(),
            want: Want::Is(Value::None),
            offset: 0,
            length: 4,
            opaque: false,
        },
        Expect {
            path: vec!["Frame".into(), "size".into()],
            ty: "int32".into(),
            want: Want::Is(Value::Int(size as i64)),
            offset: 0,
            length: 4,
            opaque: false,
        },
    ];
    let mut h = hdr.clone();
    h.shift(4);
    expects.extend(h.expects);
    let mut b = body.clone();
    b.shift(4 + hdr.bytes.len());
    expects.extend(b.expects);

    let opts = DecodeOptions {
        show_secrets: true,
        ..DecodeOptions::default()
    };
    let d = if def.kind == MessageKind::Request {
        decode_request(&msg, &opts)
    } else {
        decode_response(&msg, def.api_key, v, &opts)
    };
    let mut problems = Vec::new();
    if let Some(e) = &d.error {
        problems.push(format!("decode error: {e}"));
    }
    if d.root.name != def.name {
        problems.push(format!("root named {:?}, want {:?}", d.root.name, def.name));
    }
    if (d.api_key, d.api_version, d.correlation_id) != (Some(def.api_key), Some(v), Some(corr)) {
        problems.push(format!(
            "header facts {:?}/{:?}/{:?}, want {}/{v}/{corr}",
            d.api_key, d.api_version, d.correlation_id, def.api_key
        ));
    }
    if def.kind == MessageKind::Request && d.client_id != *client {
        problems.push(format!("client id {:?}, want {client:?}", d.client_id));
    }
    problems.extend(check_spans(&d.root, msg.len()));
    problems.extend(check_tree(&d.root, &[], &expects));
    if !problems.is_empty() {
        problems.push(format!("message bytes: {}", hex(&msg)));
    }
    problems
}

/// The top-level fields of a crate message's `Debug` text (`Name { a: 1,
/// b: BrokerId(2), c: [..] }`) whose value is an integer (bare or in a
/// newtype) or a bool: `(field, value)`.
fn debug_scalars(dbg: &str) -> Vec<(String, String)> {
    let Some(open) = dbg.find('{') else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, open + 1);
    let mut fields = Vec::new();
    // Inside a string literal (random names hold brackets and commas).
    let (mut quoted, mut escaped) = (false, false);
    for (i, ch) in dbg.char_indices().skip_while(|(i, _)| *i <= open) {
        if quoted {
            match (escaped, ch) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => quoted = false,
                _ => {}
            }
            continue;
        }
        match ch {
            '"' => quoted = true,
            '{' | '[' | '(' => depth += 1,
            '}' | ']' | ')' if depth > 0 => depth -= 1,
            ',' | '}' if depth == 0 => {
                fields.push(dbg[start..i].trim());
                start = i + 1;
                if ch == '}' {
                    break;
                }
            }
            _ => {}
        }
    }
    for f in fields {
        let Some((name, value)) = f.split_once(": ") else {
            continue;
        };
        // `BrokerId(2)` → `2`.
        let inner = match (value.find('('), value.strip_suffix(')')) {
            (Some(at), Some(v)) if value[..at].chars().all(char::is_alphanumeric) => &v[at + 1..],
            _ => value,
        };
        if inner.parse::<i64>().is_ok()
            || inner.parse::<u64>().is_ok()
            || inner == "true"
            || inner == "false"
        {
            out.push((name.to_string(), inner.to_string()));
        }
    }
    out
}

/// `ThrottleTimeMs` → `throttle_time_ms`, as the crate names fields.
fn snake(name: &str) -> String {
    let mut s = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                s.push('_');
            }
            s.push(c.to_ascii_lowercase());
        } else {
            s.push(c);
        }
    }
    s
}

/// Compares the top-level integer and bool fields the crate read (its
/// `Debug` text) with the values our encoder wrote at the same names: the
/// two implementations agree on which bytes are which field, not only on
/// the bytes. Returns how many were compared and the mismatches.
fn crate_values(dbg: &str, body: &Encoded) -> (usize, Vec<String>) {
    let theirs = debug_scalars(dbg);
    let (mut n, mut problems) = (0, Vec::new());
    for e in body.expects.iter().filter(|e| e.path.len() == 2) {
        let ours = match &e.want {
            Want::Is(Value::Int(i)) => i.to_string(),
            Want::Is(Value::Uint(u)) => u.to_string(),
            Want::Is(Value::Bool(b)) => b.to_string(),
            _ => continue,
        };
        let name = snake(&e.path[1]);
        if let Some((_, v)) = theirs.iter().find(|(k, _)| *k == name) {
            n += 1;
            if *v != ours {
                problems.push(format!(
                    "field {}: we wrote {ours}, the crate read {v}",
                    e.path[1]
                ));
            }
        }
    }
    (n, problems)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The crate decodes `body` completely, knows every tagged field in it, and
/// re-encodes it byte for byte.
fn crate_round_trip<M: Encodable + Decodable + std::fmt::Debug>(
    body: &Encoded,
    v: i16,
) -> Result<String, String> {
    let mut slice: &[u8] = &body.bytes;
    let m = M::decode(&mut slice, v).map_err(|e| format!("crate cannot decode: {e:#}"))?;
    if !slice.is_empty() {
        let at = body.bytes.len() - slice.len();
        return Err(format!(
            "crate left {} bytes undecoded, from body offset {at} ({})",
            slice.len(),
            field_at(&body.expects, at)
        ));
    }
    // An unknown tag would also re-encode identically; the crate must have
    // read every tagged field into its own field.
    let dbg = format!("{m:?}");
    if dbg
        .split("unknown_tagged_fields: {")
        .skip(1)
        .any(|rest| !rest.starts_with('}'))
    {
        return Err(format!("crate keeps unknown tagged fields: {dbg}"));
    }
    let mut out = Vec::new();
    m.encode(&mut out, v)
        .map_err(|e| format!("crate cannot re-encode: {e:#}"))?;
    if out != body.bytes {
        let at = out
            .iter()
            .zip(&body.bytes)
            .position(|(a, b)| a != b)
            .unwrap_or(out.len().min(body.bytes.len()));
        return Err(format!(
            "crate re-encodes differently from body offset {at} ({}): wrote {}, crate {}",
            field_at(&body.expects, at),
            hex(&body.bytes),
            hex(&out)
        ));
    }
    match m.compute_size(v) {
        Ok(n) if n == out.len() => Ok(dbg),
        other => Err(format!(
            "crate compute_size {other:?}, encoded {} bytes",
            out.len()
        )),
    }
}

/// The crate's request header decodes our header bytes to the same facts.
fn crate_header(
    kind: MessageKind,
    hdr: &Encoded,
    hv: i16,
    key: i16,
    v: i16,
    corr: i32,
    client: &Option<String>,
) -> Result<(), String> {
    let mut slice: &[u8] = &hdr.bytes;
    if kind == MessageKind::Request {
        let h =
            RequestHeader::decode(&mut slice, hv).map_err(|e| format!("crate header: {e:#}"))?;
        let want_client = client.as_ref().map(|s| StrBytes::from_string(s.clone()));
        if (
            h.request_api_key,
            h.request_api_version,
            h.correlation_id,
            &h.client_id,
        ) != (key, v, corr, &want_client)
        {
            return Err(format!("crate reads header {h:?}"));
        }
    } else {
        let h =
            ResponseHeader::decode(&mut slice, hv).map_err(|e| format!("crate header: {e:#}"))?;
        if h.correlation_id != corr {
            return Err(format!("crate reads header {h:?}"));
        }
    }
    if !slice.is_empty() {
        return Err(format!("crate header v{hv} leaves {} bytes", slice.len()));
    }
    Ok(())
}

/// Checks one (key, version, kind) against the crate's message type `M`.
fn compare<M: Encodable + Decodable + Default + std::fmt::Debug>(
    key: i16,
    kind: MessageKind,
    v: i16,
    crate_hv: i16,
    run: &mut Run,
) {
    let label = format!(
        "{} {} v{v}",
        schema::api_name(key).unwrap_or("?"),
        kind_name(kind)
    );
    let Some(def) = schema::message(key, kind, v) else {
        run.problems.push(format!(
            "{label} (key {key}): the crate supports it, our tables do not"
        ));
        return;
    };
    run.compared += 1;
    run.exercised.insert((key, v, kind == MessageKind::Request));
    let mut problems = Vec::new();
    let ours_hv = match kind {
        MessageKind::Request => schema::request_header_version(key, v),
        _ => schema::response_header_version(key, v),
    };
    if ours_hv != crate_hv {
        problems.push(format!(
            "header version: ours v{ours_hv}, crate v{crate_hv}"
        ));
    }
    let mut rng = StdRng::seed_from_u64(seed(key, kind, v));

    // (a) The crate's default message.
    let mut dflt = Vec::new();
    match M::default().encode(&mut dflt, v) {
        Err(e) => run
            .default_skips
            .push(format!("{label}: crate cannot encode its default: {e:#}")),
        Ok(()) => match encode_body(def, v, Fill::Default, &mut rng) {
            Err(why) => problems.push(format!("default: crate encodes it, but {why}")),
            Ok(mut ours) => {
                if ours.bytes != dflt {
                    problems.push(format!(
                        "default: schema defaults encode as {}, the crate's Default as {}",
                        hex(&ours.bytes),
                        hex(&dflt)
                    ));
                    ours.bytes = dflt;
                }
                let (hdr, corr, client) = header(key, kind, v, &mut rng);
                for p in check_kafkashark(def, v, &hdr, corr, &client, &ours) {
                    problems.push(format!("default: {p}"));
                }
                run.compared_defaults += 1;
            }
        },
    }

    // (b) Random messages.
    for i in 0..RANDOM_PER_TRIPLE {
        let body = encode_body(def, v, Fill::Random, &mut rng).expect("random fill always encodes");
        let (hdr, corr, client) = header(key, kind, v, &mut rng);
        if let Err(e) = crate_header(kind, &hdr, crate_hv, key, v, corr, &client) {
            problems.push(format!("random #{i}: {e}"));
        }
        match crate_round_trip::<M>(&body, v) {
            Err(e) => problems.push(format!("random #{i}: {e}")),
            Ok(dbg) => {
                let (n, p) = crate_values(&dbg, &body);
                run.crate_values += n;
                problems.extend(p.into_iter().map(|p| format!("random #{i}: {p}")));
            }
        }
        for p in check_kafkashark(def, v, &hdr, corr, &client, &body) {
            problems.push(format!("random #{i}: {p}"));
        }
        tally(run, &body);
        run.compared_messages += 1;
    }
    keep(run, &label, problems);
}

/// Checks a (key, version, kind) the crate lacks with our encoder and decoder alone.
fn ours_only(def: &'static MessageDef, v: i16, run: &mut Run) {
    let kind = def.kind;
    let label = format!("{} {} v{v} (ours only)", def.name, kind_name(kind));
    run.ours_only += 1;
    match run
        .ours_only_list
        .iter_mut()
        .find(|(name, _)| *name == def.name)
    {
        Some((_, vs)) => vs.push(v),
        None => run.ours_only_list.push((def.name, vec![v])),
    }
    run.exercised
        .insert((def.api_key, v, kind == MessageKind::Request));
    let mut rng = StdRng::seed_from_u64(seed(def.api_key, kind, v));
    let mut problems = Vec::new();
    // The defaults first, then the random messages.
    let fills = (0..=RANDOM_PER_TRIPLE).map(|i| if i == 0 { Fill::Default } else { Fill::Random });
    for (i, fill) in fills.enumerate() {
        let body = match encode_body(def, v, fill, &mut rng) {
            Ok(b) => b,
            Err(why) => {
                run.default_skips.push(format!("{label}: {why}"));
                continue;
            }
        };
        let (hdr, corr, client) = header(def.api_key, kind, v, &mut rng);
        for p in check_kafkashark(def, v, &hdr, corr, &client, &body) {
            problems.push(format!("#{i} {fill:?}: {p}"));
        }
        tally(run, &body);
        run.ours_only_messages += 1;
    }
    keep(run, &label, problems);
}

/// Versions as compact ranges: `v0-2,11`.
fn ranges(vs: &[i16]) -> String {
    let mut vs = vs.to_vec();
    vs.sort_unstable();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < vs.len() {
        let mut j = i;
        while j + 1 < vs.len() && vs[j + 1] == vs[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            vs[i].to_string()
        } else {
            format!("{}-{}", vs[i], vs[j])
        });
        i = j + 1;
    }
    format!("v{}", out.join(","))
}

fn keep(run: &mut Run, label: &str, problems: Vec<String>) {
    let n = problems.len();
    for p in problems.into_iter().take(KEEP) {
        run.problems.push(format!("{label}: {p}"));
    }
    if n > KEEP {
        run.problems
            .push(format!("{label}: ... and {} more", n - KEEP));
    }
}

/// Checks the request and response of one api key against the crate's types.
fn api<R>(key: ApiKey, run: &mut Run) -> usize
where
    R: Request + Default + std::fmt::Debug,
    R::Response: Default + std::fmt::Debug,
{
    let k = key as i16;
    assert_eq!(R::KEY, k, "dispatch table");
    // `ApiKey::valid_versions` may list a version the message type itself does
    // not encode (OffsetCommit/OffsetFetch v10 in 0.18); the type's range is what
    // the crate can read, so it is the one compared.
    let vr = key.valid_versions();
    if (vr.min, vr.max) != (R::VERSIONS.min, R::VERSIONS.max) {
        run.notes.push(format!(
            "{key:?}: ApiKey::valid_versions {}-{}, the request type {}-{}",
            vr.min,
            vr.max,
            R::VERSIONS.min,
            R::VERSIONS.max
        ));
    }
    for v in R::VERSIONS.min..=R::VERSIONS.max {
        compare::<R>(
            k,
            MessageKind::Request,
            v,
            key.request_header_version(v),
            run,
        );
    }
    let rv = <R::Response as Message>::VERSIONS;
    for v in rv.min..=rv.max {
        compare::<R::Response>(
            k,
            MessageKind::Response,
            v,
            key.response_header_version(v),
            run,
        );
    }
    (R::VERSIONS.max - R::VERSIONS.min + 1) as usize + (rv.max - rv.min + 1) as usize
}

/// Calls `api::<XRequest>` for the request type whose key is `key`.
macro_rules! dispatch {
    ($key:expr, $run:expr; $($req:ident)*) => {
        match $key as i16 {
            $(k if k == <$req as Request>::KEY => Some(api::<$req>($key, $run)),)*
            _ => None,
        }
    };
}

#[test]
fn kafkashark_and_kafka_protocol_read_the_same_values_from_the_same_bytes() {
    let mut run = Run::default();
    let mut crate_triples = 0;
    for key in ApiKey::iter() {
        let n = dispatch!(key, &mut run;
            ProduceRequest FetchRequest ListOffsetsRequest MetadataRequest OffsetCommitRequest
            OffsetFetchRequest FindCoordinatorRequest JoinGroupRequest HeartbeatRequest
            LeaveGroupRequest SyncGroupRequest DescribeGroupsRequest ListGroupsRequest
            SaslHandshakeRequest ApiVersionsRequest CreateTopicsRequest DeleteTopicsRequest
            DeleteRecordsRequest InitProducerIdRequest OffsetForLeaderEpochRequest
            AddPartitionsToTxnRequest AddOffsetsToTxnRequest EndTxnRequest WriteTxnMarkersRequest
            TxnOffsetCommitRequest DescribeAclsRequest CreateAclsRequest DeleteAclsRequest
            DescribeConfigsRequest AlterConfigsRequest AlterReplicaLogDirsRequest
            DescribeLogDirsRequest SaslAuthenticateRequest CreatePartitionsRequest
            CreateDelegationTokenRequest RenewDelegationTokenRequest ExpireDelegationTokenRequest
            DescribeDelegationTokenRequest DeleteGroupsRequest ElectLeadersRequest
            IncrementalAlterConfigsRequest AlterPartitionReassignmentsRequest
            ListPartitionReassignmentsRequest OffsetDeleteRequest DescribeClientQuotasRequest
            AlterClientQuotasRequest DescribeUserScramCredentialsRequest
            AlterUserScramCredentialsRequest VoteRequest BeginQuorumEpochRequest
            EndQuorumEpochRequest DescribeQuorumRequest AlterPartitionRequest UpdateFeaturesRequest
            EnvelopeRequest FetchSnapshotRequest DescribeClusterRequest DescribeProducersRequest
            BrokerRegistrationRequest BrokerHeartbeatRequest UnregisterBrokerRequest
            DescribeTransactionsRequest ListTransactionsRequest AllocateProducerIdsRequest
            ConsumerGroupHeartbeatRequest ConsumerGroupDescribeRequest
            ControllerRegistrationRequest GetTelemetrySubscriptionsRequest PushTelemetryRequest
            AssignReplicasToDirsRequest ListConfigResourcesRequest DescribeTopicPartitionsRequest
            ShareGroupHeartbeatRequest ShareGroupDescribeRequest ShareFetchRequest
            ShareAcknowledgeRequest AddRaftVoterRequest RemoveRaftVoterRequest
            UpdateRaftVoterRequest InitializeShareGroupStateRequest ReadShareGroupStateRequest
            WriteShareGroupStateRequest DeleteShareGroupStateRequest
            ReadShareGroupStateSummaryRequest DescribeShareGroupOffsetsRequest
            AlterShareGroupOffsetsRequest DeleteShareGroupOffsetsRequest
        );
        match n {
            Some(n) => crate_triples += n,
            None => run.problems.push(format!(
                "crate api key {key:?} has no request type in the dispatch table"
            )),
        }
    }

    // Every version in our tables the crate does not know: ours alone.
    let mut ours_triples = 0;
    for def in schema::MESSAGES {
        if !matches!(def.kind, MessageKind::Request | MessageKind::Response) || def.valid.is_empty()
        {
            continue;
        }
        assert!(
            def.valid.max < 100,
            "{} lists versions {}",
            def.name,
            def.valid
        );
        for v in def.valid.min..=def.valid.max {
            ours_triples += 1;
            if !run
                .exercised
                .contains(&(def.api_key, v, def.kind == MessageKind::Request))
            {
                ours_only(def, v, &mut run);
            }
        }
    }

    println!(
        "kafka-protocol differential: {} (key, version, kind) triples compared with the crate \
         ({} random + {} default messages); {} triples only in our tables ({} messages); \
         {} defaults skipped",
        run.compared,
        run.compared_messages,
        run.compared_defaults,
        run.ours_only,
        run.ours_only_messages,
        run.default_skips.len()
    );
    println!(
        "  body nodes compared: {} ({} tagged-field entries, {} record sets, {} nulls)",
        run.nodes[0], run.nodes[1], run.nodes[2], run.nodes[3]
    );
    let ours: Vec<String> = run
        .ours_only_list
        .iter()
        .map(|(name, vs)| format!("{name} {}", ranges(vs)))
        .collect();
    println!("  only in our tables: {}", ours.join(", "));
    println!(
        "  top-level scalar fields compared with the values the crate read: {}",
        run.crate_values
    );
    for s in &run.notes {
        println!("  note: {s}");
    }
    for s in &run.default_skips {
        println!("  default skipped: {s}");
    }

    let mut failures = run.problems.clone();
    if run.compared == 0 || run.compared != crate_triples {
        failures.push(format!(
            "compared {} triples, the crate supports {crate_triples}",
            run.compared
        ));
    }
    // Most bodies start with scalars (ThrottleTimeMs, ErrorCode, Acks, …).
    if run.crate_values < run.compared_messages {
        failures.push(format!(
            "only {} top-level fields compared with the crate's values in {} messages",
            run.crate_values, run.compared_messages
        ));
    }
    if run.compared_messages != run.compared * RANDOM_PER_TRIPLE {
        failures.push(format!(
            "{} random messages for {} triples",
            run.compared_messages, run.compared
        ));
    }
    if run.exercised.len() != ours_triples || run.compared + run.ours_only != ours_triples {
        failures.push(format!(
            "exercised {} triples ({} + {}), our tables hold {ours_triples}",
            run.exercised.len(),
            run.compared,
            run.ours_only
        ));
    }
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
