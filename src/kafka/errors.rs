//! Kafka protocol error codes: a static table from the `int16` on the wire to
//! Kafka's name for it.
//!
//! # Place in the data path
//!
//! Almost every Kafka response carries one or more `ErrorCode` fields (top
//! level, per topic, per partition, per member…). The schema-driven decoder
//! annotates every such field with the name looked up here, so a field tree
//! reads `error_code: 6 (NOT_LEADER_OR_FOLLOWER)` rather than a bare number,
//! and stats count errors by name. Both go through [`error_name`] /
//! [`error_info`], called once per decoded error field, which is why the
//! lookup is a bounds-checked array index rather than a search.
//!
//! [`error_code`] is the reverse direction (name → code), for filters typed by
//! a person, e.g. `error == not_leader_or_follower`; it is not on the hot path.
//!
//! # Invariants
//!
//! - [`ERRORS`] is sorted by code and dense: entry `i` has code `i - 1`,
//!   starting at `-1` (`UNKNOWN_SERVER_ERROR`) then `0` (`NONE`), through the
//!   highest code Kafka 4.2 defines. [`error_name`] relies on this and still
//!   checks the entry's code, so a broken table yields `None`, never a wrong
//!   name. Unit tests below enforce it.
//! - Names are Kafka's own `UPPER_SNAKE` names from `Errors.java`, unique, and
//!   the current ones (code 6 is `NOT_LEADER_OR_FOLLOWER`, not its pre-2.7
//!   name `NOT_LEADER_FOR_PARTITION`).
//! - `retriable` is whether Kafka's exception class for the code is a
//!   `RetriableException` (the "Retriable" column of the protocol guide).
//!   `NONE` is not retriable.
//! - Kafka never reuses or renumbers a code, so the table only grows. A code
//!   it lacks (a newer broker, or garbage) makes the lookups return `None`;
//!   callers show the number, e.g. `UNKNOWN(134)`, and must not treat it as
//!   an error in the capture.

/// One Kafka protocol error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorInfo {
    /// The code as sent on the wire.
    pub code: i16,
    /// Kafka's `UPPER_SNAKE` name, e.g. `"NOT_LEADER_OR_FOLLOWER"`.
    pub name: &'static str,
    /// Whether a client may retry the request unchanged and expect success.
    pub retriable: bool,
}

const fn e(code: i16, name: &'static str, retriable: bool) -> ErrorInfo {
    ErrorInfo {
        code,
        name,
        retriable,
    }
}

/// Every error code Kafka 4.2 defines, sorted and dense from `-1`
/// (index = code + 1).
pub static ERRORS: &[ErrorInfo] = &[
    e(-1, "UNKNOWN_SERVER_ERROR", false),
    e(0, "NONE", false),
    e(1, "OFFSET_OUT_OF_RANGE", false),
    e(2, "CORRUPT_MESSAGE", true),
    e(3, "UNKNOWN_TOPIC_OR_PARTITION", true),
    e(4, "INVALID_FETCH_SIZE", false),
    e(5, "LEADER_NOT_AVAILABLE", true),
    e(6, "NOT_LEADER_OR_FOLLOWER", true),
    e(7, "REQUEST_TIMED_OUT", true),
    e(8, "BROKER_NOT_AVAILABLE", false),
    e(9, "REPLICA_NOT_AVAILABLE", true),
    e(10, "MESSAGE_TOO_LARGE", false),
    e(11, "STALE_CONTROLLER_EPOCH", false),
    e(12, "OFFSET_METADATA_TOO_LARGE", false),
    e(13, "NETWORK_EXCEPTION", true),
    e(14, "COORDINATOR_LOAD_IN_PROGRESS", true),
    e(15, "COORDINATOR_NOT_AVAILABLE", true),
    e(16, "NOT_COORDINATOR", true),
    e(17, "INVALID_TOPIC_EXCEPTION", false),
    e(18, "RECORD_LIST_TOO_LARGE", false),
    e(19, "NOT_ENOUGH_REPLICAS", true),
    e(20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", true),
    e(21, "INVALID_REQUIRED_ACKS", false),
    e(22, "ILLEGAL_GENERATION", false),
    e(23, "INCONSISTENT_GROUP_PROTOCOL", false),
    e(24, "INVALID_GROUP_ID", false),
    e(25, "UNKNOWN_MEMBER_ID", false),
    e(26, "INVALID_SESSION_TIMEOUT", false),
    e(27, "REBALANCE_IN_PROGRESS", false),
    e(28, "INVALID_COMMIT_OFFSET_SIZE", false),
    e(29, "TOPIC_AUTHORIZATION_FAILED", false),
    e(30, "GROUP_AUTHORIZATION_FAILED", false),
    e(31, "CLUSTER_AUTHORIZATION_FAILED", false),
    e(32, "INVALID_TIMESTAMP", false),
    e(33, "UNSUPPORTED_SASL_MECHANISM", false),
    e(34, "ILLEGAL_SASL_STATE", false),
    e(35, "UNSUPPORTED_VERSION", false),
    e(36, "TOPIC_ALREADY_EXISTS", false),
    e(37, "INVALID_PARTITIONS", false),
    e(38, "INVALID_REPLICATION_FACTOR", false),
    e(39, "INVALID_REPLICA_ASSIGNMENT", false),
    e(40, "INVALID_CONFIG", false),
    e(41, "NOT_CONTROLLER", true),
    e(42, "INVALID_REQUEST", false),
    e(43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", false),
    e(44, "POLICY_VIOLATION", false),
    e(45, "OUT_OF_ORDER_SEQUENCE_NUMBER", false),
    e(46, "DUPLICATE_SEQUENCE_NUMBER", false),
    e(47, "INVALID_PRODUCER_EPOCH", false),
    e(48, "INVALID_TXN_STATE", false),
    e(49, "INVALID_PRODUCER_ID_MAPPING", false),
    e(50, "INVALID_TRANSACTION_TIMEOUT", false),
    e(51, "CONCURRENT_TRANSACTIONS", true),
    e(52, "TRANSACTION_COORDINATOR_FENCED", false),
    e(53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", false),
    e(54, "SECURITY_DISABLED", false),
    e(55, "OPERATION_NOT_ATTEMPTED", false),
    e(56, "KAFKA_STORAGE_ERROR", true),
    e(57, "LOG_DIR_NOT_FOUND", false),
    e(58, "SASL_AUTHENTICATION_FAILED", false),
    e(59, "UNKNOWN_PRODUCER_ID", false),
    e(60, "REASSIGNMENT_IN_PROGRESS", false),
    e(61, "DELEGATION_TOKEN_AUTH_DISABLED", false),
    e(62, "DELEGATION_TOKEN_NOT_FOUND", false),
    e(63, "DELEGATION_TOKEN_OWNER_MISMATCH", false),
    e(64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", false),
    e(65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", false),
    e(66, "DELEGATION_TOKEN_EXPIRED", false),
    e(67, "INVALID_PRINCIPAL_TYPE", false),
    e(68, "NON_EMPTY_GROUP", false),
    e(69, "GROUP_ID_NOT_FOUND", false),
    e(70, "FETCH_SESSION_ID_NOT_FOUND", true),
    e(71, "INVALID_FETCH_SESSION_EPOCH", true),
    e(72, "LISTENER_NOT_FOUND", true),
    e(73, "TOPIC_DELETION_DISABLED", false),
    e(74, "FENCED_LEADER_EPOCH", true),
    e(75, "UNKNOWN_LEADER_EPOCH", true),
    e(76, "UNSUPPORTED_COMPRESSION_TYPE", false),
    e(77, "STALE_BROKER_EPOCH", false),
    e(78, "OFFSET_NOT_AVAILABLE", true),
    e(79, "MEMBER_ID_REQUIRED", false),
    e(80, "PREFERRED_LEADER_NOT_AVAILABLE", true),
    e(81, "GROUP_MAX_SIZE_REACHED", false),
    e(82, "FENCED_INSTANCE_ID", false),
    e(83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", true),
    e(84, "ELECTION_NOT_NEEDED", true),
    e(85, "NO_REASSIGNMENT_IN_PROGRESS", false),
    e(86, "GROUP_SUBSCRIBED_TO_TOPIC", false),
    e(87, "INVALID_RECORD", false),
    e(88, "UNSTABLE_OFFSET_COMMIT", true),
    e(89, "THROTTLING_QUOTA_EXCEEDED", true),
    e(90, "PRODUCER_FENCED", false),
    e(91, "RESOURCE_NOT_FOUND", false),
    e(92, "DUPLICATE_RESOURCE", false),
    e(93, "UNACCEPTABLE_CREDENTIAL", false),
    e(94, "INCONSISTENT_VOTER_SET", false),
    e(95, "INVALID_UPDATE_VERSION", false),
    e(96, "FEATURE_UPDATE_FAILED", false),
    e(97, "PRINCIPAL_DESERIALIZATION_FAILURE", false),
    e(98, "SNAPSHOT_NOT_FOUND", false),
    e(99, "POSITION_OUT_OF_RANGE", false),
    e(100, "UNKNOWN_TOPIC_ID", true),
    e(101, "DUPLICATE_BROKER_REGISTRATION", false),
    e(102, "BROKER_ID_NOT_REGISTERED", false),
    e(103, "INCONSISTENT_TOPIC_ID", true),
    e(104, "INCONSISTENT_CLUSTER_ID", false),
    e(105, "TRANSACTIONAL_ID_NOT_FOUND", false),
    e(106, "FETCH_SESSION_TOPIC_ID_ERROR", true),
    e(107, "INELIGIBLE_REPLICA", false),
    e(108, "NEW_LEADER_ELECTED", false),
    e(109, "OFFSET_MOVED_TO_TIERED_STORAGE", false),
    e(110, "FENCED_MEMBER_EPOCH", false),
    e(111, "UNRELEASED_INSTANCE_ID", false),
    e(112, "UNSUPPORTED_ASSIGNOR", false),
    e(113, "STALE_MEMBER_EPOCH", false),
    e(114, "MISMATCHED_ENDPOINT_TYPE", false),
    e(115, "UNSUPPORTED_ENDPOINT_TYPE", false),
    e(116, "UNKNOWN_CONTROLLER_ID", false),
    e(117, "UNKNOWN_SUBSCRIPTION_ID", false),
    e(118, "TELEMETRY_TOO_LARGE", false),
    e(119, "INVALID_REGISTRATION", false),
    e(120, "TRANSACTION_ABORTABLE", false),
    e(121, "INVALID_RECORD_STATE", false),
    e(122, "SHARE_SESSION_NOT_FOUND", true),
    e(123, "INVALID_SHARE_SESSION_EPOCH", true),
    e(124, "FENCED_STATE_EPOCH", false),
    e(125, "INVALID_VOTER_KEY", false),
    e(126, "DUPLICATE_VOTER", false),
    e(127, "VOTER_NOT_FOUND", false),
    e(128, "INVALID_REGULAR_EXPRESSION", false),
    e(129, "REBOOTSTRAP_REQUIRED", false),
    e(130, "STREAMS_INVALID_TOPOLOGY", false),
    e(131, "STREAMS_INVALID_TOPOLOGY_EPOCH", false),
    e(132, "STREAMS_TOPOLOGY_FENCED", false),
    e(133, "SHARE_SESSION_LIMIT_REACHED", true),
];

/// The entry for `code`, or `None` if Kafka (as of 4.2) defines no such code.
///
/// O(1): the table is dense from `-1`, so the entry sits at `code + 1`; the
/// entry's code is checked anyway.
pub fn error_info(code: i16) -> Option<&'static ErrorInfo> {
    let index = usize::try_from(i32::from(code) + 1).ok()?;
    ERRORS.get(index).filter(|info| info.code == code)
}

/// Kafka's name for `code` (e.g. `6` → `"NOT_LEADER_OR_FOLLOWER"`), or `None`
/// if the code is unknown. O(1).
pub fn error_name(code: i16) -> Option<&'static str> {
    error_info(code).map(|info| info.name)
}

/// The code Kafka gives the error called `name`, matched case-insensitively
/// (`"not_leader_or_follower"` → `6`), or `None` if no error has that name.
pub fn error_code(name: &str) -> Option<i16> {
    ERRORS
        .iter()
        .find(|info| info.name.eq_ignore_ascii_case(name))
        .map(|info| info.code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn table_is_sorted_and_dense_from_minus_one() {
        assert_eq!(ERRORS[0].code, -1);
        for (i, info) in ERRORS.iter().enumerate() {
            assert_eq!(i32::from(info.code), i as i32 - 1, "{info:?} at index {i}");
        }
    }

    #[test]
    fn anchors() {
        assert_eq!(error_name(-1), Some("UNKNOWN_SERVER_ERROR"));
        assert_eq!(error_name(0), Some("NONE"));
        assert_eq!(error_name(6), Some("NOT_LEADER_OR_FOLLOWER"));
        assert_eq!(error_name(35), Some("UNSUPPORTED_VERSION"));
        assert_eq!(error_name(121), Some("INVALID_RECORD_STATE"));
        assert_eq!(error_name(124), Some("FENCED_STATE_EPOCH"));
        assert_eq!(error_name(133), Some("SHARE_SESSION_LIMIT_REACHED"));
        assert!(!error_info(0).unwrap().retriable);
        assert!(error_info(6).unwrap().retriable);
    }

    #[test]
    fn names_are_unique_upper_snake() {
        let mut seen = HashSet::new();
        for info in ERRORS {
            assert!(seen.insert(info.name), "duplicate name {}", info.name);
            assert!(!info.name.is_empty());
            assert!(
                info.name
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'),
                "{} is not UPPER_SNAKE",
                info.name
            );
            assert!(!info.name.starts_with('_') && !info.name.ends_with('_'));
            assert!(!info.name.contains("__"));
        }
    }

    #[test]
    fn lookups_round_trip() {
        for info in ERRORS {
            assert_eq!(error_info(info.code), Some(info));
            assert_eq!(error_name(info.code), Some(info.name));
            assert_eq!(error_code(info.name), Some(info.code));
            assert_eq!(error_code(&info.name.to_ascii_lowercase()), Some(info.code));
        }
        assert_eq!(error_code("Not_Leader_Or_Follower"), Some(6));
    }

    #[test]
    fn unknowns_are_none() {
        let last = ERRORS.last().unwrap().code;
        for code in [i16::MIN, -3, -2, last + 1, 1000, i16::MAX] {
            assert_eq!(error_info(code), None, "code {code}");
            assert_eq!(error_name(code), None, "code {code}");
        }
        assert_eq!(error_code(""), None);
        assert_eq!(error_code("NOT_LEADER_FOR_PARTITION"), None);
        assert_eq!(error_code("NOT_LEADER_OR_FOLLOWER "), None);
    }
}
