//! Tests of [`super`] (telemetry).

use super::*;

#[test]
fn a_batch_of_known_series_is_encoded_before_it_is_queued_as_the_writer_would() {
    let sample = |name: &str, ms: i64, value: f64, cpu: &str| MetricSample {
        name: name.into(),
        ts: OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
            .expect("a time in range"),
        value,
        labels: [("cpu".to_string(), cpu.to_string())].into_iter().collect(),
    };
    let samples = vec![
        sample("cpu.percent", 2_000, 3.5, "1"),
        sample("cpu.percent", 2_000, 1.25, "0"),
        sample("cpu.percent", 1_000, 7.0, "0"),
        // A repeated series at one timestamp: the first is kept.
        sample("cpu.percent", 2_000, 99.0, "1"),
    ];
    let agent = Uuid::from_u128(7);
    let cache = SeriesCache::default();
    // Unknown agent or series: nothing resolved, nothing encoded.
    let none = cache.resolve(agent, &samples);
    assert!(none.ids.iter().all(Option::is_none) && none.rows.is_empty());
    let mut buf = String::new();
    let key = |buf: &mut String, s: &MetricSample| {
        series_key(buf, s);
        buf.clone()
    };
    cache.learn(
        agent,
        Learned {
            agent_seq: Some(4),
            series: vec![(key(&mut buf, &samples[0]), 11)],
        },
    );
    let partial = cache.resolve(agent, &samples);
    assert_eq!(partial.ids, vec![Some(11), None, None, Some(11)]);
    assert!(
        partial.rows.is_empty(),
        "a batch with an unknown series is encoded by the writer"
    );
    cache.learn(
        agent,
        Learned {
            agent_seq: None,
            series: vec![(key(&mut buf, &samples[1]), 10)],
        },
    );
    let all = cache.resolve(agent, &samples);
    assert_eq!(all.seq, Some(4));
    assert_eq!(all.ids, vec![Some(11), Some(10), Some(10), Some(11)]);
    let rows: Vec<(i64, String)> = all.rows.iter().map(|(t, r)| (*t, r.to_string())).collect();
    assert_eq!(
        rows,
        vec![
            (1_000, metric_rows::encode(&[(10i64, 7.0f64)])),
            (2_000, metric_rows::encode(&[(10i64, 1.25f64), (11, 3.5)])),
        ]
    );
}

#[test]
fn rollup_folds_per_agent_bucket_and_series_in_series_order() {
    let points = [
        (2, 7, 61_000, 1.0),
        (1, 9, 1_000, 4.0),
        (1, 3, 2_000, -1.0),
        (1, 9, 59_999, 2.0),
        (1, 9, 60_000, 8.0),
        (2, 7, 62_000, 5.0),
        (1, 3, 1_000, f64::MAX),
        (1, 3, 3_000, f64::MAX),
    ];
    let got = rollup(&points, MINUTE_MS);
    let want: BTreeMap<(i64, i64), Vec<Stat>> = [
        (
            (1, 0),
            vec![(3, 3, f64::MAX, -1.0, f64::MAX), (9, 2, 6.0, 2.0, 4.0)],
        ),
        ((1, 60_000), vec![(9, 1, 8.0, 8.0, 8.0)]),
        ((2, 60_000), vec![(7, 2, 6.0, 1.0, 5.0)]),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);
    let hours = rollup(&points, HOUR_MS);
    assert_eq!(hours.len(), 2);
    assert_eq!(hours[&(1, 0)][1], (9, 3, 14.0, 2.0, 8.0));
}
