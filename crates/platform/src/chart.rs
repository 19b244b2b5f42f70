//! Line charts drawn on the server as SVG: no chart library, no script, readable without
//! colour (each series has its own dash pattern, named in the legend).

use std::fmt::Write;

/// One line: its legend and its points (unix ms, value), oldest first.
#[derive(Debug, Clone)]
pub struct Line {
    /// Legend.
    pub label: String,
    /// Points.
    pub points: Vec<(i64, f64)>,
}

const W: f64 = 600.0;
const H: f64 = 160.0;
const LEFT: f64 = 48.0;
const BOTTOM: f64 = 20.0;
const DASHES: [&str; 4] = ["", "6 3", "2 3", "8 3 2 3"];

/// The text escaped for SVG/HTML attributes and text.
pub(super) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A value as a short label: `1.2k`, `3.4M`, `12.5`.
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// An SVG line chart of `lines` over `[from_ms, to_ms)`; the y axis from 0 (or the lowest
/// value, when negative) to `max` or the highest value. `title` names it for screen readers.
pub fn line_chart(
    title: &str,
    lines: &[Line],
    from_ms: i64,
    to_ms: i64,
    max: Option<f64>,
) -> String {
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="{}"><title>{}</title>"#,
        escape(title),
        escape(title)
    );
    let values = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    let (lo, hi) = values.fold((0.0f64, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let hi = max
        .unwrap_or(if hi > lo { hi } else { lo + 1.0 })
        .max(lo + f64::EPSILON);
    let span = (to_ms - from_ms).max(1) as f64;
    let plot_w = W - LEFT - 4.0;
    let plot_h = H - BOTTOM - 6.0;
    let x = |t: i64| LEFT + (t - from_ms) as f64 / span * plot_w;
    let y = |v: f64| 6.0 + (1.0 - (v - lo) / (hi - lo)) * plot_h;
    // Axes and the y range.
    let _ = write!(
        svg,
        r#"<line class="axis" x1="{LEFT}" y1="6" x2="{LEFT}" y2="{}"/><line class="axis" x1="{LEFT}" y1="{}" x2="{}" y2="{}"/>"#,
        H - BOTTOM,
        H - BOTTOM,
        W - 4.0,
        H - BOTTOM
    );
    let _ = write!(
        svg,
        r#"<text class="tick" x="{}" y="14" text-anchor="end">{}</text><text class="tick" x="{}" y="{}" text-anchor="end">{}</text>"#,
        LEFT - 4.0,
        short(hi),
        LEFT - 4.0,
        H - BOTTOM,
        short(lo)
    );
    if lines.iter().all(|l| l.points.is_empty()) {
        let _ = write!(
            svg,
            r#"<text class="tick" x="{}" y="{}" text-anchor="middle">no data in this range</text>"#,
            LEFT + plot_w / 2.0,
            H / 2.0
        );
    }
    for (i, l) in lines.iter().enumerate() {
        if l.points.is_empty() {
            continue;
        }
        let pts: Vec<String> = l
            .points
            .iter()
            .map(|(t, v)| format!("{:.1},{:.1}", x(*t), y(*v)))
            .collect();
        let _ = write!(
            svg,
            r#"<polyline class="line s{}" stroke-dasharray="{}" points="{}"><title>{}</title></polyline>"#,
            i % DASHES.len(),
            DASHES[i % DASHES.len()],
            pts.join(" "),
            escape(&l.label)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// What the dashboard's script draws the same chart from (uPlot): the range in unix seconds,
/// the y bounds, a unit for labels, the series' labels, the shared time axis and each
/// series' values on it (`null` where a series has no point), as JSON safe inside a
/// `<script type="application/json">` element.
pub fn chart_data(
    lines: &[Line],
    from_ms: i64,
    to_ms: i64,
    max: Option<f64>,
    unit: &str,
) -> String {
    let mut xs: Vec<i64> = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .collect();
    // The range's ends, without values: the time axis spans the whole range (and zooming
    // out returns to it) however few points there are.
    xs.push(from_ms);
    xs.push(to_ms);
    xs.sort_unstable();
    xs.dedup();
    let ys: Vec<Vec<Option<f64>>> = lines
        .iter()
        .map(|l| {
            let at: std::collections::HashMap<i64, f64> = l.points.iter().copied().collect();
            xs.iter().map(|x| at.get(x).copied()).collect()
        })
        .collect();
    let min = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(0.0f64, f64::min);
    serde_json::json!({
        "from": from_ms / 1000,
        "to": to_ms / 1000,
        "min": min,
        "max": max,
        "unit": unit,
        "series": lines.iter().map(|l| l.label.as_str()).collect::<Vec<_>>(),
        "x": xs.iter().map(|x| *x as f64 / 1000.0).collect::<Vec<_>>(),
        "y": ys,
    })
    .to_string()
    .replace('<', "\\u003c")
}

/// The legend of `lines`, with each one's dash pattern.
pub fn legend(lines: &[Line]) -> String {
    let mut out = String::from(r#"<ul class="legend">"#);
    for (i, l) in lines.iter().enumerate() {
        let _ = write!(
            out,
            r#"<li><svg width="28" height="8" aria-hidden="true"><line class="line s{}" x1="0" y1="4" x2="28" y2="4" stroke-dasharray="{}"/></svg> {}</li>"#,
            i % DASHES.len(),
            DASHES[i % DASHES.len()],
            escape(&l.label)
        );
    }
    out.push_str("</ul>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_data_aligns_series_on_one_time_axis_spanning_the_range() {
        let lines = [
            Line {
                label: "</script>in".into(),
                points: vec![(61_000, 1.0), (121_000, 2.0)],
            },
            Line {
                label: "out".into(),
                points: vec![(121_000, 5.0)],
            },
        ];
        let text = chart_data(&lines, 0, 180_000, None, "B/s");
        assert!(!text.contains('<'), "safe inside a script element: {text}");
        let d: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(d["x"], serde_json::json!([0.0, 61.0, 121.0, 180.0]));
        assert_eq!(d["y"][0], serde_json::json!([null, 1.0, 2.0, null]));
        assert_eq!(d["y"][1], serde_json::json!([null, null, 5.0, null]));
        assert_eq!(d["series"][0], "</script>in");
        assert_eq!((d["from"].as_i64(), d["to"].as_i64()), (Some(0), Some(180)));
    }

    #[test]
    fn points_map_into_the_plot_and_labels_are_escaped() {
        let lines = [Line {
            label: "<eth0>".into(),
            points: vec![(0, 0.0), (50, 50.0), (100, 100.0)],
        }];
        let svg = line_chart("CPU & more", &lines, 0, 100, Some(100.0));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("CPU &amp; more") && svg.contains("&lt;eth0&gt;"));
        // The first point sits on the left axis at the bottom, the last at the top right.
        assert!(
            svg.contains(&format!("points=\"{LEFT:.1},{:.1} ", H - BOTTOM)),
            "{svg}"
        );
        assert!(svg.contains(&format!(" {:.1},6.0\"", W - 4.0)), "{svg}");
        assert!(line_chart("x", &[], 0, 10, None).contains("no data"));
        assert_eq!(short(1_500.0), "1.5k");
        assert_eq!(short(2_500_000.0), "2.5M");
        assert_eq!(short(42.0), "42");
        assert_eq!(short(0.5), "0.5");
        assert!(legend(&lines).contains("&lt;eth0&gt;"));
    }
}
