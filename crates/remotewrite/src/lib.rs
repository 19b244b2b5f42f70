//! Metrics past one machine (CONTRACT 26): what the hub sends to a Prometheus remote-write
//! 1.0 receiver (VictoriaMetrics, Prometheus, Mimir, Thanos). This part is the wire: series
//! named and labelled as the contract says, encoded as the protobuf `WriteRequest` and
//! compressed with snappy's block format, with the headers a receiver expects. Its own small
//! encoder (prost's derive, the `snap` crate) rather than a client library.

pub mod wire;

pub use wire::{HEADERS, Series, encode, metric_name, tag_label};
