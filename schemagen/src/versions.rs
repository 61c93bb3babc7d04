//! Version-range strings of Kafka's message definitions.
//!
//! The JSON writes a range as `"none"`, `"5"` (one version), `"0-2"`
//! (inclusive) or `"3+"` (open-ended). [`Versions`] mirrors the table type
//! `kafkashark::kafka::schema::Versions` (same `min`/`max`, `min > max` for
//! "none") and renders itself as the Rust expression that builds that type.

use std::fmt;

/// An inclusive version range; `max == i16::MAX` for an open range, `min > max` for none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Versions {
    /// Lowest version.
    pub min: i16,
    /// Highest version (`i16::MAX` when open-ended).
    pub max: i16,
}

impl Versions {
    /// The empty range.
    pub const NONE: Versions = Versions { min: 0, max: -1 };

    /// A range from `min` to `max` inclusive.
    pub const fn new(min: i16, max: i16) -> Versions {
        Versions { min, max }
    }

    /// True when the range holds no version.
    pub const fn is_empty(self) -> bool {
        self.min > self.max
    }

    /// True when `v` lies in the range.
    pub const fn contains(self, v: i16) -> bool {
        v >= self.min && v <= self.max
    }

    /// Parses `"none"`, `"N"`, `"N-M"` or `"N+"`.
    ///
    /// Version numbers must be non-negative and fit an `i16`; `N-M` needs
    /// `N <= M`. Surrounding whitespace is not accepted: the files never have it.
    pub fn parse(text: &str) -> Result<Versions, String> {
        fn num(part: &str, text: &str) -> Result<i16, String> {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("bad version range {text:?}"));
            }
            part.parse::<i16>()
                .map_err(|_| format!("version out of range in {text:?}"))
        }
        if text == "none" {
            return Ok(Versions::NONE);
        }
        if let Some(min) = text.strip_suffix('+') {
            return Ok(Versions::new(num(min, text)?, i16::MAX));
        }
        if let Some((a, b)) = text.split_once('-') {
            let (min, max) = (num(a, text)?, num(b, text)?);
            if min > max {
                return Err(format!("empty version range {text:?}"));
            }
            return Ok(Versions::new(min, max));
        }
        let v = num(text, text)?;
        Ok(Versions::new(v, v))
    }

    /// The Rust expression for the table type: `Versions::NONE`, `Versions::new(3, 13)`
    /// or `Versions::new(3, i16::MAX)`.
    pub fn rust(self) -> String {
        if self.is_empty() {
            "Versions::NONE".to_string()
        } else if self.max == i16::MAX {
            format!("Versions::new({}, i16::MAX)", self.min)
        } else {
            format!("Versions::new({}, {})", self.min, self.max)
        }
    }
}

/// The JSON spelling: `none`, `5`, `0-2`, `3+`.
impl fmt::Display for Versions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            f.write_str("none")
        } else if self.max == i16::MAX {
            write!(f, "{}+", self.min)
        } else if self.min == self.max {
            write!(f, "{}", self.min)
        } else {
            write!(f, "{}-{}", self.min, self.max)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Versions;

    #[test]
    fn parses_every_form() {
        assert_eq!(Versions::parse("none"), Ok(Versions::NONE));
        assert_eq!(Versions::parse("5"), Ok(Versions::new(5, 5)));
        assert_eq!(Versions::parse("0-2"), Ok(Versions::new(0, 2)));
        assert_eq!(Versions::parse("3+"), Ok(Versions::new(3, i16::MAX)));
        assert_eq!(Versions::parse("0+"), Ok(Versions::new(0, i16::MAX)));
        assert_eq!(
            Versions::parse("32767"),
            Ok(Versions::new(i16::MAX, i16::MAX))
        );
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "", "+", "-", "1-", "-1", "2-1", "a", "1+2", "1-2-3", " 1", "1 ", "NONE", "32768",
            "1.5",
        ] {
            assert!(Versions::parse(bad).is_err(), "{bad:?} should not parse");
        }
    }

    #[test]
    fn renders_rust_and_json() {
        assert_eq!(Versions::NONE.rust(), "Versions::NONE");
        assert_eq!(Versions::new(0, 2).rust(), "Versions::new(0, 2)");
        assert_eq!(
            Versions::new(3, i16::MAX).rust(),
            "Versions::new(3, i16::MAX)"
        );
        for text in ["none", "5", "0-2", "3+"] {
            assert_eq!(Versions::parse(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn contains_and_empty() {
        assert!(Versions::NONE.is_empty());
        assert!(!Versions::NONE.contains(0));
        assert!(Versions::new(3, i16::MAX).contains(100));
        assert!(!Versions::new(3, 13).contains(2));
    }
}
