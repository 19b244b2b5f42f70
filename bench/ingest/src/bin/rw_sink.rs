//! A remote-write 1.0 receiver that keeps nothing, for `bench/remote_write.sh`: it stands
//! for a receiver on another machine, so that "forwarding on against off" can be measured
//! with only the hub's own forwarding cost on these cores (a co-located VictoriaMetrics
//! takes a sixth of the machine from the hub).
//!
//! It still does what any receiver must to accept a request: reads the body, checks the
//! headers, decompresses the snappy block and walks the protobuf `WriteRequest` (counting
//! series and samples, refusing a malformed one with 400), then answers 204. The counts are
//! at `GET /counts` as `series samples requests`.
//!
//! `rw_sink --listen 127.0.0.1:18429`

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use clap::Parser;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Parser)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:18429")]
    listen: String,
}

#[derive(Default)]
struct Counts {
    series: AtomicU64,
    samples: AtomicU64,
    requests: AtomicU64,
}

/// A protobuf varint at `*i`, moving past it.
fn varint(b: &[u8], i: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*i)?;
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The fields of a message: (field number, wire type, payload of a length-delimited one).
fn fields(b: &[u8], mut each: impl FnMut(u64, &[u8]) -> Option<()>) -> Option<()> {
    let mut i = 0;
    while i < b.len() {
        let key = varint(b, &mut i)?;
        match key & 7 {
            0 => {
                varint(b, &mut i)?;
            }
            1 => i = i.checked_add(8).filter(|&e| e <= b.len())?,
            5 => i = i.checked_add(4).filter(|&e| e <= b.len())?,
            2 => {
                let len = usize::try_from(varint(b, &mut i)?).ok()?;
                let end = i.checked_add(len).filter(|&e| e <= b.len())?;
                each(key >> 3, &b[i..end])?;
                i = end;
            }
            _ => return None,
        }
    }
    Some(())
}

/// (series, samples) of a `WriteRequest{timeseries = 1}`, `TimeSeries{labels = 1,
/// samples = 2}`; None if it is malformed or a series has no `__name__` or no sample.
fn count(body: &[u8]) -> Option<(u64, u64)> {
    let (mut series, mut samples) = (0u64, 0u64);
    fields(body, |field, ts| {
        if field != 1 {
            return Some(());
        }
        series += 1;
        let (mut named, mut own) = (false, 0u64);
        fields(ts, |f, payload| {
            match f {
                1 => fields(payload, |lf, v| {
                    named |= lf == 1 && v == b"__name__";
                    Some(())
                })?,
                2 => own += 1,
                _ => {}
            }
            Some(())
        })?;
        samples += own;
        (named && own > 0).then_some(())
    })?;
    Some((series, samples))
}

async fn write(
    State(counts): State<Arc<Counts>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or("");
    if header("content-encoding") != "snappy" || header("content-type") != "application/x-protobuf"
    {
        return (StatusCode::BAD_REQUEST, "not a remote-write request".into());
    }
    let raw = match snap::raw::Decoder::new().decompress_vec(&body) {
        Ok(raw) => raw,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("snappy: {e}")),
    };
    match count(&raw) {
        Some((series, samples)) => {
            counts.series.fetch_add(series, Ordering::Relaxed);
            counts.samples.fetch_add(samples, Ordering::Relaxed);
            counts.requests.fetch_add(1, Ordering::Relaxed);
            (StatusCode::NO_CONTENT, String::new())
        }
        None => (StatusCode::BAD_REQUEST, "malformed WriteRequest".into()),
    }
}

async fn counts(State(counts): State<Arc<Counts>>) -> String {
    format!(
        "{} {} {}\n",
        counts.series.load(Ordering::Relaxed),
        counts.samples.load(Ordering::Relaxed),
        counts.requests.load(Ordering::Relaxed)
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let app = axum::Router::new()
        .route("/api/v1/write", post(write))
        .route("/counts", get(counts))
        .layer(axum::extract::DefaultBodyLimit::max(64 << 20))
        .with_state(Arc::new(Counts::default()));
    let listener = tokio::net::TcpListener::bind(&args.listen).await?;
    axum::serve(listener, app).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_the_hub_encodes_and_refuses_garbage() {
        let body = trusthub_remotewrite::encode(&[
            trusthub_remotewrite::Series {
                name: "cpu.percent".into(),
                labels: vec![("hostname".into(), "web-1".into())],
                samples: vec![(1_000, 1.0), (2_000, 2.5)],
            },
            trusthub_remotewrite::Series {
                name: "mem.used".into(),
                labels: vec![],
                samples: vec![(1_000, 3.0)],
            },
        ]);
        let raw = snap::raw::Decoder::new()
            .decompress_vec(&body)
            .expect("snappy");
        assert_eq!(count(&raw), Some((2, 3)));
        assert_eq!(count(&raw[..raw.len() - 1]), None);
        assert_eq!(count(&[0x0a, 0x05, 0x01]), None);
    }
}
