//! Prometheus remote write 1.0 on the wire: `prometheus.WriteRequest` (types.proto and
//! remote.proto of Prometheus: `TimeSeries{labels = 1, samples = 2}`, `Label{name = 1,
//! value = 2}`, `Sample{value = 1, timestamp = 2}`), snappy block compression.

use prost::Message;

/// The headers of a remote-write request (besides authorisation and the User-Agent).
pub const HEADERS: [(&str, &str); 3] = [
    ("content-type", "application/x-protobuf"),
    ("content-encoding", "snappy"),
    ("x-prometheus-remote-write-version", "0.1.0"),
];

#[derive(Clone, PartialEq, Message)]
struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, Message)]
struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    samples: Vec<Sample>,
}

#[derive(Clone, PartialEq, Message)]
struct Label {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    value: String,
}

#[derive(Clone, PartialEq, Message)]
struct Sample {
    #[prost(double, tag = "1")]
    value: f64,
    #[prost(int64, tag = "2")]
    timestamp: i64,
}

/// One series and its samples, as the hub stored them.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The metric's name as stored (`cpu.percent`); sent sanitised ([`metric_name`]).
    pub name: String,
    /// Its labels (`tenant_id`, `agent_id`, `hostname`, its own, `tag_<key>`); sent sorted
    /// by name, each name once (the first value kept), empty values left out.
    pub labels: Vec<(String, String)>,
    /// `(unix milliseconds, value)`; sent in timestamp order.
    pub samples: Vec<(i64, f64)>,
}

/// A name as Prometheus allows it: every character outside `[a-zA-Z0-9_:]` becomes `_`, and
/// a leading digit gets a `_` before it (`cpu.percent` → `cpu_percent`).
pub fn metric_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) || out.is_empty() {
        out.insert(0, '_');
    }
    out
}

/// An agent tag as a label: `env:prod` → `tag_env="prod"`, `canary` → `tag_canary="true"`
/// (keys sanitised like names; label names may not hold `:`).
pub fn tag_label(tag: &str) -> (String, String) {
    let (key, value) = match tag.split_once(':') {
        Some((k, v)) => (k, v),
        None => (tag, "true"),
    };
    (
        format!("tag_{}", metric_name(key).replace(':', "_")),
        value.to_owned(),
    )
}

/// The request body: the series as a `WriteRequest`, snappy-compressed.
pub fn encode(series: &[Series]) -> Vec<u8> {
    let request = WriteRequest {
        timeseries: series
            .iter()
            .map(|s| {
                let mut labels: Vec<Label> = s
                    .labels
                    .iter()
                    .filter(|(n, v)| !v.is_empty() && !n.is_empty() && n != "__name__")
                    .map(|(n, v)| Label {
                        name: metric_name(n).replace(':', "_"),
                        value: v.clone(),
                    })
                    .collect();
                labels.push(Label {
                    name: "__name__".into(),
                    value: metric_name(&s.name),
                });
                // Sorted by name, each once (a stable sort keeps the first value).
                labels.sort_by(|a, b| a.name.cmp(&b.name));
                labels.dedup_by(|later, kept| later.name == kept.name);
                let mut samples: Vec<Sample> = s
                    .samples
                    .iter()
                    .map(|(t, v)| Sample {
                        value: *v,
                        timestamp: *t,
                    })
                    .collect();
                samples.sort_by_key(|x| x.timestamp);
                TimeSeries { labels, samples }
            })
            .collect(),
    };
    let raw = request.encode_to_vec();
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_tags_follow_the_contract() {
        assert_eq!(metric_name("cpu.percent"), "cpu_percent");
        assert_eq!(metric_name("disk-io/read:bytes"), "disk_io_read:bytes");
        assert_eq!(metric_name("1m.load"), "_1m_load");
        assert_eq!(tag_label("env:prod"), ("tag_env".into(), "prod".into()));
        assert_eq!(tag_label("canary"), ("tag_canary".into(), "true".into()));
        assert_eq!(
            tag_label("team.name:a:b"),
            ("tag_team_name".into(), "a:b".into())
        );
    }

    #[test]
    fn the_request_is_a_snappy_block_of_a_sorted_write_request() {
        let body = encode(&[Series {
            name: "cpu.percent".into(),
            labels: vec![
                ("hostname".into(), "web-1".into()),
                ("agent_id".into(), "a".into()),
                ("empty".into(), String::new()),
                ("hostname".into(), "dup".into()),
            ],
            samples: vec![(2000, 2.5), (1000, 1.5)],
        }]);
        let raw = snap::raw::Decoder::new()
            .decompress_vec(&body)
            .expect("snappy");
        let back = WriteRequest::decode(raw.as_slice()).expect("protobuf");
        let ts = &back.timeseries[0];
        let names: Vec<(&str, &str)> = ts
            .labels
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("__name__", "cpu_percent"),
                ("agent_id", "a"),
                ("hostname", "web-1")
            ]
        );
        let samples: Vec<(i64, f64)> = ts.samples.iter().map(|s| (s.timestamp, s.value)).collect();
        assert_eq!(samples, [(1000, 1.5), (2000, 2.5)]);
    }
}
