//! Prometheus remote write 1.0 on the wire: `prometheus.WriteRequest` (types.proto and
//! remote.proto of Prometheus: `TimeSeries{labels = 1, samples = 2}`, `Label{name = 1,
//! value = 2}`, `Sample{value = 1, timestamp = 2}`), snappy block compression.

/// The headers of a remote-write request (besides authorisation and the User-Agent).
pub const HEADERS: [(&str, &str); 3] = [
    ("content-type", "application/x-protobuf"),
    ("content-encoding", "snappy"),
    ("x-prometheus-remote-write-version", "0.1.0"),
];

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

/// A series' labels, ready for the wire: `__name__` and the labels sanitised, sorted by
/// name, each name once (the first value kept), empty values left out, each encoded as the
/// `labels` field of a `TimeSeries`. Made once per series and reused for every request.
pub fn label_bytes(name: &str, labels: &[(String, String)]) -> Vec<u8> {
    let mut all: Vec<(String, &str)> = labels
        .iter()
        .filter(|(n, v)| !v.is_empty() && !n.is_empty() && n != "__name__")
        .map(|(n, v)| (metric_name(n).replace(':', "_"), v.as_str()))
        .collect();
    let name = metric_name(name);
    all.push(("__name__".into(), &name));
    // Sorted by name, each once (a stable sort keeps the first value).
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all.dedup_by(|later, kept| later.0 == kept.0);
    let mut out = Vec::with_capacity(all.iter().map(|(n, v)| n.len() + v.len() + 8).sum());
    for (n, v) in all {
        // Label{name = 1, value = 2}, as field 1 of TimeSeries.
        let len =
            1 + varint_len(n.len() as u64) + n.len() + 1 + varint_len(v.len() as u64) + v.len();
        out.push(0x0a);
        varint(&mut out, len as u64);
        out.push(0x0a);
        varint(&mut out, n.len() as u64);
        out.extend_from_slice(n.as_bytes());
        out.push(0x12);
        varint(&mut out, v.len() as u64);
        out.extend_from_slice(v.as_bytes());
    }
    out
}

/// `WriteRequest`s written one after another into the same buffers: series appended one by
/// one, then the request compressed and the buffers kept for the next (a request is a few
/// megabytes before compression; fresh buffers for each cost a page fault every 4 KiB).
pub struct Request {
    raw: Vec<u8>,
    samples: usize,
    compressed: Vec<u8>,
    snappy: snap::raw::Encoder,
}

impl Default for Request {
    fn default() -> Request {
        Request {
            raw: Vec::new(),
            samples: 0,
            compressed: Vec::new(),
            snappy: snap::raw::Encoder::new(),
        }
    }
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("bytes", &self.raw.len())
            .field("samples", &self.samples)
            .finish()
    }
}

/// Buffers larger than this are let go after a request rather than kept for the next.
pub const KEEP_BYTES: usize = 16 << 20;

/// A finished request: its body and how many samples it carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    /// The `WriteRequest`, snappy-compressed (block format).
    pub bytes: Vec<u8>,
    /// Its samples.
    pub samples: usize,
}

impl Request {
    /// Appends a series: its [`label_bytes`] and its samples (`(unix ms, value)`, in
    /// timestamp order).
    pub fn push(&mut self, labels: &[u8], samples: &[(i64, f64)]) {
        // Sample{value = 1 (double), timestamp = 2 (int64)}, as field 2 of TimeSeries.
        let sample_len = |t: i64| 9 + 1 + varint_len(t as u64);
        let len = labels.len()
            + samples
                .iter()
                .map(|(t, _)| 1 + varint_len(sample_len(*t) as u64) + sample_len(*t))
                .sum::<usize>();
        // TimeSeries as field 1 of WriteRequest.
        self.raw.push(0x0a);
        varint(&mut self.raw, len as u64);
        self.raw.extend_from_slice(labels);
        for (t, v) in samples {
            self.raw.push(0x12);
            varint(&mut self.raw, sample_len(*t) as u64);
            self.raw.push(0x09);
            self.raw.extend_from_slice(&v.to_le_bytes());
            self.raw.push(0x10);
            varint(&mut self.raw, *t as u64);
        }
        self.samples += samples.len();
    }

    /// Samples appended since the last [`Request::finish`].
    pub fn samples(&self) -> usize {
        self.samples
    }

    /// The request of what was appended (a `WriteRequest`, snappy-compressed), and a fresh
    /// start for the next one in the same buffers.
    pub fn finish(&mut self) -> Body {
        self.finish_into(Vec::new())
    }

    /// Like [`Request::finish`], the body written into `into` (a buffer of an earlier body
    /// that was sent: reused, it costs no page faults).
    pub fn finish_into(&mut self, mut into: Vec<u8>) -> Body {
        let need = snap::raw::max_compress_len(self.raw.len());
        if self.compressed.len() < need {
            self.compressed.resize(need, 0);
        }
        // Cannot fail: the input is far below snappy's 4 GiB limit and the output is sized
        // for it (an empty body would be refused by the receiver, and counted).
        let n = self
            .snappy
            .compress(&self.raw, &mut self.compressed)
            .unwrap_or(0);
        into.clear();
        into.extend_from_slice(&self.compressed[..n]);
        let body = Body {
            bytes: into,
            samples: self.samples,
        };
        self.raw.clear();
        self.samples = 0;
        if self.raw.capacity() > KEEP_BYTES {
            // An unusually large request (long label sets): its buffers are not kept.
            self.raw = Vec::new();
            self.compressed = Vec::new();
        }
        body
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// The request body of these series: a `WriteRequest`, snappy-compressed.
pub fn encode(series: &[Series]) -> Vec<u8> {
    let mut request = Request::default();
    for s in series {
        let mut samples = s.samples.clone();
        samples.sort_by_key(|x| x.0);
        request.push(&label_bytes(&s.name, &s.labels), &samples);
    }
    request.finish().bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    // Prometheus' types.proto and remote.proto, decoded by prost to check the hand-written
    // encoder.
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

    #[test]
    fn varints_and_negative_timestamps_decode_as_protobuf() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u32::MAX as u64,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
        }
        let body = encode(&[Series {
            name: "x".into(),
            labels: vec![("a".repeat(200), "b".repeat(300))],
            samples: vec![(-5, 0.0), (0, -1.0), (1_764_000_000_000, f64::MAX)],
        }]);
        let raw = snap::raw::Decoder::new()
            .decompress_vec(&body)
            .expect("snappy");
        let back = WriteRequest::decode(raw.as_slice()).expect("protobuf");
        let samples: Vec<(i64, f64)> = back.timeseries[0]
            .samples
            .iter()
            .map(|s| (s.timestamp, s.value))
            .collect();
        assert_eq!(
            samples,
            [(-5, 0.0), (0, -1.0), (1_764_000_000_000, f64::MAX)]
        );
        assert_eq!(back.timeseries[0].labels[1].value, "b".repeat(300));
    }

    #[test]
    fn requests_written_one_after_another_in_the_same_buffers_stand_alone() {
        let mut request = Request::default();
        let decode = |body: &Body| {
            let raw = snap::raw::Decoder::new()
                .decompress_vec(&body.bytes)
                .expect("snappy");
            WriteRequest::decode(raw.as_slice()).expect("protobuf")
        };
        request.push(&label_bytes("a", &[]), &[(1, 1.0), (2, 2.0)]);
        request.push(&label_bytes("b", &[]), &[(1, 3.0)]);
        let first = request.finish();
        assert_eq!((first.samples, request.samples()), (3, 0));
        request.push(&label_bytes("c", &[]), &[(5, 5.0)]);
        let second = request.finish();
        assert_eq!(second.samples, 1);
        let names = |w: &WriteRequest| -> Vec<String> {
            w.timeseries
                .iter()
                .map(|t| t.labels[0].value.clone())
                .collect()
        };
        assert_eq!(names(&decode(&first)), ["a", "b"]);
        assert_eq!(names(&decode(&second)), ["c"]);
        assert_eq!(decode(&second).timeseries[0].samples[0].timestamp, 5);
        // Nothing appended: an empty WriteRequest, which decodes.
        let empty = request.finish();
        assert_eq!(empty.samples, 0);
        assert!(decode(&empty).timeseries.is_empty());
    }

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
