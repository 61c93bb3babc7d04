//! The list filter of the `/` bar: the command line's filter language
//! (`crate::filter`, described in docs/filter.md), re-exported for the TUI.

pub use crate::filter::Filter;
