//! Differential check of `kafkashark::kafka::errors` against an independent
//! source: the `kafka-protocol` crate's `ResponseError` (Kafka 4.1 as of 0.18).
//!
//! The crate names each error with a CamelCase variant whose `Debug` output is
//! the bare name (`NotLeaderOrFollower`), and returns `Unknown(n)` for codes it
//! lacks and `None` for 0. Kafka's CamelCase is a mechanical rewrite of the
//! UPPER_SNAKE name (each word capitalised, acronyms like TXN, ID, SASL written
//! `Txn`, `Id`, `Sasl`), so we convert our names that way and compare strings.

use kafka_protocol::error::ResponseError;
use kafkashark::kafka::errors::*;

/// Codes checked against the crate. Well past Kafka's highest code, so codes
/// the crate knows and we lack show up too.
const RANGE: std::ops::RangeInclusive<i16> = -1..=200;

/// Codes where our name and the crate's variant name genuinely differ:
/// (code, our UPPER_SNAKE name, crate's variant name, why).
/// None so far: every name converts mechanically.
const NAMING_DIFFERENCES: &[(i16, &str, &str, &str)] = &[];

/// Codes where our `retriable` flag and the crate's `is_retriable()` differ:
/// (code, our flag, why). Each entry must still differ, so a crate fix shows.
const RETRIABLE_DIFFERENCES: &[(i16, bool, &str)] = &[(
    51,
    true,
    // CONCURRENT_TRANSACTIONS: Kafka's ConcurrentTransactionsException extends
    // RetriableException (the protocol guide says "True"); kafka-protocol 0.18
    // lists it as non-retriable.
    "kafka-protocol 0.18 marks CONCURRENT_TRANSACTIONS non-retriable; Kafka says retriable",
)];

/// Codes in our table that kafka-protocol 0.18 (Kafka 4.1) does not know,
/// because they are newer. Empty: Kafka 4.2 defines no code past 133
/// (SHARE_SESSION_LIMIT_REACHED, new in 4.1), and the crate has them all.
const NEWER_THAN_CRATE: &[i16] = &[];

/// `NOT_LEADER_OR_FOLLOWER` → `NotLeaderOrFollower`.
fn camel(upper_snake: &str) -> String {
    upper_snake
        .split('_')
        .map(|word| {
            let lower = word.to_ascii_lowercase();
            let mut chars = lower.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// The crate's view of `code`: `Some((name, retriable))` if it knows the code,
/// `None` if it does not. Code 0 (no error) is not an error to the crate.
fn crate_view(code: i16) -> Option<(String, bool)> {
    match ResponseError::try_from_code(code) {
        None => None,
        Some(ResponseError::Unknown(n)) => {
            assert_eq!(n, code);
            None
        }
        Some(err) => {
            assert_eq!(err.code(), code);
            Some((format!("{err:?}"), err.is_retriable()))
        }
    }
}

#[test]
fn camel_conversion() {
    assert_eq!(camel("NOT_LEADER_OR_FOLLOWER"), "NotLeaderOrFollower");
    assert_eq!(camel("INVALID_TXN_STATE"), "InvalidTxnState");
    assert_eq!(camel("UNKNOWN_TOPIC_ID"), "UnknownTopicId");
    assert_eq!(camel("NONE"), "None");
}

#[test]
fn every_code_the_crate_knows_matches_our_table() {
    let mut checked = 0;
    let mut mismatches = Vec::new();
    for code in RANGE {
        let Some((crate_name, crate_retriable)) = crate_view(code) else {
            continue;
        };
        checked += 1;
        let Some(ours) = error_info(code) else {
            mismatches.push(format!("{code}: crate has {crate_name}, we have nothing"));
            continue;
        };
        let expected = NAMING_DIFFERENCES
            .iter()
            .find(|d| d.0 == code)
            .map(|d| {
                assert_eq!(d.1, ours.name, "stale NAMING_DIFFERENCES entry for {code}");
                d.2.to_string()
            })
            .unwrap_or_else(|| camel(ours.name));
        if expected != crate_name {
            mismatches.push(format!("{code}: ours {} vs crate {crate_name}", ours.name));
        }
        if let Some(d) = RETRIABLE_DIFFERENCES.iter().find(|d| d.0 == code) {
            assert_eq!(
                d.1, ours.retriable,
                "stale RETRIABLE_DIFFERENCES entry for {code}"
            );
            assert_ne!(
                ours.retriable, crate_retriable,
                "{code}: the crate now agrees ({}); drop it from RETRIABLE_DIFFERENCES",
                d.2
            );
        } else if ours.retriable != crate_retriable {
            mismatches.push(format!(
                "{code} {}: retriable ours {} vs crate {crate_retriable}",
                ours.name, ours.retriable
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "mismatches:\n{}",
        mismatches.join("\n")
    );
    // -1 and 1..=133 at least; guards against the crate API silently changing.
    assert!(checked >= 134, "only {checked} codes known to the crate");
}

#[test]
fn codes_we_have_that_the_crate_lacks_are_listed() {
    let mut extra = Vec::new();
    for info in ERRORS {
        if info.code == 0 {
            // NONE: the crate returns None for 0 by design.
            assert_eq!(ResponseError::try_from_code(0), None);
            assert_eq!(info.name, "NONE");
            continue;
        }
        if crate_view(info.code).is_none() {
            extra.push(info.code);
        }
    }
    assert_eq!(
        extra, NEWER_THAN_CRATE,
        "codes in our table unknown to kafka-protocol; list them in NEWER_THAN_CRATE"
    );
}

#[test]
fn unknown_codes_agree() {
    for code in RANGE {
        if code != 0 && crate_view(code).is_none() && !NEWER_THAN_CRATE.contains(&code) {
            assert_eq!(error_name(code), None, "code {code}");
        }
    }
}

#[test]
fn public_lookups() {
    assert_eq!(error_name(6), Some("NOT_LEADER_OR_FOLLOWER"));
    assert_eq!(error_code("not_leader_or_follower"), Some(6));
    assert_eq!(error_info(-1).map(|i| i.name), Some("UNKNOWN_SERVER_ERROR"));
    assert_eq!(error_name(0), Some("NONE"));
    let last = ERRORS.last().unwrap();
    assert_eq!((last.code, last.name), (133, "SHARE_SESSION_LIMIT_REACHED"));
    assert_eq!(ERRORS.len(), 135);
}
