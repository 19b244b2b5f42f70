//! How metric rows hold their samples (migration 0039): one row of `metric_points` per agent
//! and timestamp, one row of a rollup table per agent and bucket, the samples in it as JSON
//! text sorted by series id (`[[series, value], ...]`, `[[series, count, sum, min, max],
//! ...]`). An agent's scrape of 100 series is one row write instead of a hundred, and its
//! minute and hour rollups one each instead of a hundred each.
//!
//! The helpers here read and write such rows by key, `(agent_seq, ts)` or `(agent_seq,
//! bucket)`, on either engine.

use trusthub_store::{Exec, Handle, StoreError, StoreResult};

/// A series id and its value.
pub type Sample = (i64, f64);

/// A series id and its count, sum, minimum and maximum in a bucket.
pub type Stat = (i64, i64, f64, f64, f64);

/// A table of metric rows: its name, key column (after `agent_seq`) and samples column.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    /// The table.
    pub name: &'static str,
    /// The second key column.
    pub key: &'static str,
    /// The JSON column.
    pub column: &'static str,
}

/// Raw points.
pub const POINTS: Table = Table {
    name: "metric_points",
    key: "ts",
    column: "points",
};

/// A row as read: agent number, key (timestamp or bucket), the JSON text.
pub type Row = (i64, i64, String);

/// The JSON text of samples or stats (sorted by series by the caller; values finite, see
/// [`finite`]).
pub fn encode<T: serde::Serialize>(rows: &[T]) -> String {
    serde_json::to_string(rows).unwrap_or_else(|_| "[]".into())
}

/// The samples of a raw row, sorted by series.
pub fn samples(text: &str) -> StoreResult<Vec<Sample>> {
    let mut v: Vec<Sample> =
        serde_json::from_str(text).map_err(|_| StoreError::Corrupt("metric_points.points"))?;
    if !v.is_sorted_by_key(|s| s.0) {
        v.sort_by_key(|s| s.0);
    }
    Ok(v)
}

/// The stats of a rollup row, sorted by series.
pub fn stats(text: &str) -> StoreResult<Vec<Stat>> {
    let mut v: Vec<Stat> =
        serde_json::from_str(text).map_err(|_| StoreError::Corrupt("metric rollup stats"))?;
    if !v.is_sorted_by_key(|s| s.0) {
        v.sort_by_key(|s| s.0);
    }
    Ok(v)
}

/// The stats of one series in a rollup row's text, the others' numbers skipped unread (the
/// overview draws one series out of rows that hold a hundred).
pub fn stat_of(text: &str, series: i64) -> StoreResult<Option<Stat>> {
    let corrupt = || StoreError::Corrupt("metric rollup stats");
    let mut rest = text
        .trim()
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .ok_or_else(corrupt)?;
    // Each entry is a flat array of numbers: from one `[` to the next `]`.
    while let Some(open) = rest.find('[') {
        let close = open + rest[open..].find(']').ok_or_else(corrupt)?;
        let entry = &rest[open..=close];
        let id = entry[1..].split(',').next().unwrap_or_default().trim();
        if id.parse::<i64>().map_err(|_| corrupt())? == series {
            return serde_json::from_str(entry).map(Some).map_err(|_| corrupt());
        }
        rest = &rest[close + 1..];
    }
    Ok(None)
}

/// The value of `series` in sorted samples.
pub fn find<T>(sorted: &[T], series: i64, id: impl Fn(&T) -> i64) -> Option<&T> {
    sorted
        .binary_search_by_key(&series, id)
        .ok()
        .map(|i| &sorted[i])
}

/// A finite double (a sum may overflow; JSON cannot say infinity).
pub fn finite(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else if x > 0.0 {
        f64::MAX
    } else {
        f64::MIN
    }
}

/// Folds `add` into `into` (both sorted by series): counts and sums add up, minimum and
/// maximum widen.
pub fn fold(into: &[Stat], add: &[Stat]) -> Vec<Stat> {
    let mut out = Vec::with_capacity(into.len() + add.len());
    let (mut i, mut j) = (0, 0);
    while i < into.len() || j < add.len() {
        match (into.get(i), add.get(j)) {
            (Some(a), Some(b)) if a.0 == b.0 => {
                out.push((
                    a.0,
                    a.1 + b.1,
                    finite(a.2 + b.2),
                    a.3.min(b.3),
                    a.4.max(b.4),
                ));
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a.0 < b.0 => {
                out.push(*a);
                i += 1;
            }
            (Some(_), Some(b)) | (None, Some(b)) => {
                out.push(*b);
                j += 1;
            }
            (Some(a), None) => {
                out.push(*a);
                i += 1;
            }
            (None, None) => break,
        }
    }
    out
}

/// The rows of `table` at these keys (absent keys are left out). With `lock` (PostgreSQL), the
/// rows are locked for update in key order.
pub async fn read(
    ex: &mut impl Exec,
    table: Table,
    keys: &[(i64, i64)],
    lock: bool,
) -> StoreResult<Vec<Row>> {
    let mut out = Vec::with_capacity(keys.len());
    if keys.is_empty() {
        return Ok(out);
    }
    let Table { name, key, column } = table;
    match ex.handle() {
        Handle::Postgres(c) => {
            let (agents, at): (Vec<i64>, Vec<i64>) = keys.iter().copied().unzip();
            let sql = format!(
                "SELECT p.agent_seq, p.{key}, CAST(p.{column} AS TEXT) FROM {name} p \
                 JOIN UNNEST($1::BIGINT[], $2::BIGINT[]) AS k(a, t) ON p.agent_seq = k.a AND p.{key} = k.t \
                 ORDER BY p.agent_seq, p.{key}{}",
                if lock { " FOR UPDATE OF p" } else { "" }
            );
            out = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(agents)
                .bind(at)
                .fetch_all(&mut *c)
                .await?;
        }
        Handle::Sqlite(c) => {
            for chunk in keys.chunks(4_000) {
                // The keys drive the join (CROSS JOIN keeps that order): each is one search of
                // the key. `(agent_seq, ts) IN (VALUES ...)` would scan the table.
                let mut qb = sqlx::QueryBuilder::new(format!(
                    "SELECT p.agent_seq, p.{key}, CAST(p.{column} AS TEXT) FROM (VALUES "
                ));
                let mut list = qb.separated(", ");
                for (a, t) in chunk {
                    list.push("(");
                    list.push_bind_unseparated(*a);
                    list.push_unseparated(", ");
                    list.push_bind_unseparated(*t);
                    list.push_unseparated(")");
                }
                qb.push(format!(
                    ") AS k CROSS JOIN {name} p ON p.agent_seq = k.column1 AND p.{key} = k.column2"
                ));
                let rows: Vec<Row> = qb.build_query_as().fetch_all(&mut *c).await?;
                out.extend(rows);
            }
        }
    }
    Ok(out)
}

/// Inserts rows whose key is free; answers the keys inserted.
pub async fn insert_new(
    ex: &mut impl Exec,
    table: Table,
    rows: &[(i64, i64, &str)],
) -> StoreResult<Vec<(i64, i64)>> {
    insert(ex, table, rows, false).await
}

/// Writes rows, replacing what is stored at their keys.
pub async fn write(
    ex: &mut impl Exec,
    table: Table,
    rows: &[(i64, i64, String)],
) -> StoreResult<()> {
    let rows: Vec<(i64, i64, &str)> = rows.iter().map(|(a, t, v)| (*a, *t, v.as_str())).collect();
    insert(ex, table, &rows, true).await.map(drop)
}

/// Inserts rows; a stored row at the same key is kept, or with `replace` replaced. Answers the
/// keys inserted (with `replace`: nothing).
async fn insert(
    ex: &mut impl Exec,
    table: Table,
    rows: &[(i64, i64, &str)],
    replace: bool,
) -> StoreResult<Vec<(i64, i64)>> {
    let mut out = Vec::with_capacity(rows.len());
    if rows.is_empty() {
        return Ok(out);
    }
    let Table { name, key, column } = table;
    let conflict = if replace {
        format!("ON CONFLICT (agent_seq, {key}) DO UPDATE SET {column} = excluded.{column}")
    } else {
        "ON CONFLICT DO NOTHING".to_owned()
    };
    // Replacing answers nothing: no rows to stream back from the connection's thread.
    let returning = if replace {
        String::new()
    } else {
        format!(" RETURNING agent_seq, {key}")
    };
    match ex.handle() {
        Handle::Postgres(c) => {
            let sql = format!(
                "INSERT INTO {name} (agent_seq, {key}, {column}) \
                 SELECT a, t, CAST(v AS JSON) FROM UNNEST($1::BIGINT[], $2::BIGINT[], $3::TEXT[]) AS u(a, t, v) \
                 {conflict}{returning}"
            );
            let query = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(rows.iter().map(|r| r.0).collect::<Vec<_>>())
                .bind(rows.iter().map(|r| r.1).collect::<Vec<_>>())
                .bind(rows.iter().map(|r| r.2).collect::<Vec<_>>());
            if replace {
                sqlx::Executor::execute(&mut *c, query).await?;
            } else {
                out = query.fetch_all(&mut *c).await?;
            }
        }
        Handle::Sqlite(c) => {
            for chunk in rows.chunks(8_000) {
                let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new(format!(
                    "INSERT INTO {name} (agent_seq, {key}, {column}) "
                ));
                qb.push_values(chunk, |mut b, (a, t, v)| {
                    b.push_bind(*a).push_bind(*t).push_bind(*v);
                });
                qb.push(format!(" {conflict}{returning}"));
                if replace {
                    qb.build().execute(&mut *c).await?;
                } else {
                    let got: Vec<(i64, i64)> = qb.build_query_as().fetch_all(&mut *c).await?;
                    out.extend(got);
                }
            }
        }
    }
    Ok(out)
}

/// Makes rows exist at these keys (an empty list where none was), so that [`read`] with
/// `lock` can lock them (PostgreSQL: two processes folding into the same new bucket).
pub async fn ensure(ex: &mut impl Exec, table: Table, keys: &[(i64, i64)]) -> StoreResult<()> {
    if let Handle::Postgres(c) = ex.handle() {
        if keys.is_empty() {
            return Ok(());
        }
        let Table { name, key, column } = table;
        let (agents, at): (Vec<i64>, Vec<i64>) = keys.iter().copied().unzip();
        let sql = format!(
            "INSERT INTO {name} (agent_seq, {key}, {column}) \
             SELECT a, t, CAST('[]' AS JSON) FROM UNNEST($1::BIGINT[], $2::BIGINT[]) AS u(a, t) \
             ON CONFLICT DO NOTHING"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(agents)
            .bind(at)
            .execute(&mut *c)
            .await?;
    }
    Ok(())
}

/// The rows of one agent with keys in `[from, to)`, in key order, at most `limit`.
pub async fn range(
    ex: &mut impl Exec,
    table: Table,
    agent_seq: i64,
    from: i64,
    to: i64,
    limit: i64,
) -> StoreResult<Vec<(i64, String)>> {
    let Table { name, key, column } = table;
    let sql = format!(
        "SELECT {key}, CAST({column} AS TEXT) FROM {name} \
         WHERE agent_seq = $1 AND {key} >= $2 AND {key} < $3 ORDER BY {key} LIMIT $4"
    );
    Ok(
        trusthub_store::on!(ex, c => sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(agent_seq).bind(from).bind(to).bind(limit).fetch_all(&mut *c).await?),
    )
}

/// The rows of these agents with keys in `[from, to)`: agent number, key, JSON text.
pub async fn range_of_agents(
    ex: &mut impl Exec,
    table: Table,
    agent_seqs: &[i64],
    from: i64,
    to: i64,
) -> StoreResult<Vec<Row>> {
    let mut out = Vec::new();
    let Table { name, key, column } = table;
    for chunk in agent_seqs.chunks(4_000) {
        let rows: Vec<Row> = trusthub_store::on!(ex, c => {
            let mut qb = sqlx::QueryBuilder::new(format!(
                "SELECT agent_seq, {key}, CAST({column} AS TEXT) FROM {name} WHERE agent_seq IN ("
            ));
            let mut list = qb.separated(", ");
            for s in chunk {
                list.push_bind(*s);
            }
            qb.push(format!(") AND {key} >= "));
            qb.push_bind(from);
            qb.push(format!(" AND {key} < "));
            qb.push_bind(to);
            qb.push(format!(" ORDER BY agent_seq, {key}"));
            qb.build_query_as().fetch_all(&mut *c).await?
        });
        out.extend(rows);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_merges_by_series() {
        let a = vec![(1, 2, 3.0, 1.0, 2.0), (3, 1, 5.0, 5.0, 5.0)];
        let b = vec![(2, 1, 7.0, 7.0, 7.0), (3, 2, 1.0, -1.0, 2.0)];
        assert_eq!(
            fold(&a, &b),
            vec![
                (1, 2, 3.0, 1.0, 2.0),
                (2, 1, 7.0, 7.0, 7.0),
                (3, 3, 6.0, -1.0, 5.0)
            ]
        );
        assert_eq!(fold(&[], &b), b);
        assert_eq!(fold(&a, &[]), a);
    }

    #[test]
    fn text_round_trips_exactly_and_sums_stay_finite() {
        let s: Vec<Sample> = vec![(1, 0.1 + 0.2), (2, -0.0), (3, 1e300), (4, 5e-324)];
        assert_eq!(samples(&encode(&s)).expect("decode"), s);
        assert_eq!(
            samples("[[3,1.0],[1,2]]").expect("decode"),
            vec![(1, 2.0), (3, 1.0)]
        );
        let overflow = fold(&[(1, 1, f64::MAX, 0.0, 0.0)], &[(1, 1, f64::MAX, 0.0, 0.0)]);
        assert_eq!(overflow[0].2, f64::MAX);
        assert!(stats(&encode(&overflow)).is_ok());
        assert!(samples("[[1,null]]").is_err());
    }

    #[test]
    fn one_series_is_read_as_the_whole_row_reads_it() {
        let row: Vec<Stat> = (0..100)
            .map(|i| (i * 3 + 1, i, i as f64 * 0.1 + 0.2, -1e300, 5e-324))
            .collect();
        for text in [
            encode(&row),
            // As PostgreSQL or a hand may space it, and out of order.
            encode(&row).replace(',', " , ").replace('[', "[ "),
            "[[7,1,2.5,2.5,2.5],[3,2,1,0,1]]".to_owned(),
        ] {
            let all = stats(&text).expect("stats");
            for series in [0, 1, 3, 7, 100, 298, 299] {
                assert_eq!(
                    stat_of(&text, series).expect("stat"),
                    find(&all, series, |s| s.0).copied(),
                    "{series} in {text:.40}"
                );
            }
        }
        assert_eq!(stat_of("[]", 1).expect("empty"), None);
        for bad in ["", "[[1,2", "[[x,1,1,1,1]]", "[[1,1,null,1,1]]", "{}"] {
            assert!(stat_of(bad, 1).is_err(), "{bad}");
        }
    }
}
