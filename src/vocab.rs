//! The vocabulary every layer shares: a packet's time and a byte's
//! direction in a Kafka connection. Below every layer (capture, flow,
//! kafka, analyzer, stats), so that none of them imports another's types
//! only to name these.

use std::fmt;

/// A packet timestamp: seconds since the Unix epoch and nanoseconds within the second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    /// Whole seconds since 1970-01-01T00:00:00Z (negative before it).
    pub secs: i64,
    /// Nanoseconds within the second, `0..1_000_000_000`.
    pub nanos: u32,
}

impl Timestamp {
    /// A timestamp from seconds and nanoseconds; nanoseconds past one second carry over.
    pub fn new(secs: i64, nanos: u32) -> Timestamp {
        let carry = i64::from(nanos / 1_000_000_000);
        Timestamp {
            secs: secs.saturating_add(carry),
            nanos: nanos % 1_000_000_000,
        }
    }

    /// Epoch seconds as a float (what `print` shows as `ts`).
    pub fn as_f64(self) -> f64 {
        self.secs as f64 + f64::from(self.nanos) / 1e9
    }

    /// Nanoseconds since the epoch.
    pub fn as_nanos(self) -> i128 {
        i128::from(self.secs) * 1_000_000_000 + i128::from(self.nanos)
    }

    /// `ns` nanoseconds later (saturating at the end of time).
    #[must_use]
    pub fn add_nanos(self, ns: u64) -> Timestamp {
        let secs = i64::try_from(ns / 1_000_000_000).unwrap_or(i64::MAX);
        // Below two seconds' worth: no overflow, and `new` carries it.
        let nanos = self.nanos + (ns % 1_000_000_000) as u32;
        Timestamp::new(self.secs.saturating_add(secs), nanos)
    }

    /// `ns` nanoseconds earlier when positive, later when negative (a
    /// capture's clock set onto another's); saturating at the ends of time.
    #[must_use]
    pub fn minus_nanos(self, ns: i64) -> Timestamp {
        let t = self.as_nanos() - i128::from(ns);
        let secs = t.div_euclid(1_000_000_000);
        let nanos = t.rem_euclid(1_000_000_000) as u32;
        match i64::try_from(secs) {
            Ok(secs) => Timestamp { secs, nanos },
            Err(_) if secs < 0 => Timestamp {
                secs: i64::MIN,
                nanos: 0,
            },
            Err(_) => Timestamp {
                secs: i64::MAX,
                nanos: 999_999_999,
            },
        }
    }

    /// `self - earlier` in nanoseconds, signed.
    pub fn signed_nanos_since(self, earlier: Timestamp) -> i64 {
        let d = self.as_nanos() - earlier.as_nanos();
        i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
    }

    /// `self - earlier` in nanoseconds, 0 when `earlier` is later (packet clocks can step back).
    pub fn nanos_since(self, earlier: Timestamp) -> u64 {
        let d = self.as_nanos() - earlier.as_nanos();
        u64::try_from(d.max(0)).unwrap_or(u64::MAX)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}", self.secs, self.nanos)
    }
}

/// Direction of bytes in a Kafka connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// Client → broker: requests.
    ClientToBroker,
    /// Broker → client: responses.
    BrokerToClient,
}

impl Direction {
    /// The other direction.
    pub fn reverse(self) -> Direction {
        match self {
            Direction::ClientToBroker => Direction::BrokerToClient,
            Direction::BrokerToClient => Direction::ClientToBroker,
        }
    }

    /// 0 for client → broker, 1 for broker → client.
    pub fn index(self) -> usize {
        match self {
            Direction::ClientToBroker => 0,
            Direction::BrokerToClient => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanos_added_carry_and_saturate() {
        let t = Timestamp::new(10, 999_999_999);
        assert_eq!(t.add_nanos(1), Timestamp::new(11, 0));
        assert_eq!(t.add_nanos(2_000_000_001), Timestamp::new(13, 0));
        assert_eq!(t.add_nanos(5).nanos_since(t), 5);
        let end = Timestamp::new(i64::MAX, 0).add_nanos(u64::MAX);
        assert_eq!(end.secs, i64::MAX);
    }

    #[test]
    fn timestamp_float_and_carry() {
        let t = Timestamp::new(10, 1_500_000_000);
        assert_eq!(
            t,
            Timestamp {
                secs: 11,
                nanos: 500_000_000
            }
        );
        assert!((t.as_f64() - 11.5).abs() < 1e-9);
        assert_eq!(t.nanos_since(Timestamp::new(11, 0)), 500_000_000);
        assert_eq!(Timestamp::new(11, 0).nanos_since(t), 0);
        assert_eq!(t.to_string(), "11.500000000");
    }
}
