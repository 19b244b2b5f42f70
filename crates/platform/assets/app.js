// Trusthub dashboard: copy buttons, confirmations and interactive charts. The only script
// besides htmx and the vendored uPlot (on pages with charts); no inline code anywhere.
document.addEventListener("click", function (e) {
  var b = e.target.closest("button[data-copy]");
  if (!b) return;
  var el = document.getElementById(b.getAttribute("data-copy"));
  if (!el || !navigator.clipboard) return;
  navigator.clipboard.writeText(el.textContent.trim()).then(function () {
    b.textContent = "Copied";
  }, function () {
    b.textContent = "Select and copy it by hand";
  });
});

// The main menu: one group open at a time, closed by a click elsewhere or Escape.
document.addEventListener("toggle", function (e) {
  var d = e.target;
  if (!d.matches || !d.matches("details.menu") || !d.open) return;
  document.querySelectorAll("details.menu[open]").forEach(function (o) {
    if (o !== d) o.open = false;
  });
}, true);
document.addEventListener("click", function (e) {
  if (e.target.closest("details.menu")) return;
  document.querySelectorAll("details.menu[open]").forEach(function (o) { o.open = false; });
});
document.addEventListener("keydown", function (e) {
  if (e.key !== "Escape") return;
  document.querySelectorAll("details.menu[open]").forEach(function (o) { o.open = false; });
});

// Confirmations: a form with data-confirm asks before it is sent (untrack, expect stopped,
// delete); without script the form is sent as it is.
document.addEventListener("submit", function (e) {
  var f = e.target.closest("form[data-confirm]");
  if (f && !window.confirm(f.getAttribute("data-confirm"))) e.preventDefault();
});

// Charts: the server draws each chart as SVG (the page without script); with script, each
// becomes an interactive uPlot chart from the same data: a time axis, the values at the
// pointer in the legend, drag across to zoom in, double-click to zoom out.
document.addEventListener("DOMContentLoaded", function () {
  if (!window.uPlot) return;
  var css = getComputedStyle(document.documentElement);
  var v = function (name) { return css.getPropertyValue(name).trim(); };
  var strokes = [v("--accent"), v("--warn"), v("--ok"), v("--bad")];
  var dashes = [[], [6, 3], [2, 3], [8, 3, 2, 3]];
  var short = function (x) {
    var a = Math.abs(x);
    if (a >= 1e9) return (x / 1e9).toFixed(1) + "G";
    if (a >= 1e6) return (x / 1e6).toFixed(1) + "M";
    if (a >= 1e3) return (x / 1e3).toFixed(1) + "k";
    return a >= 10 || a === 0 ? x.toFixed(0) : x.toFixed(1);
  };
  var axis = { stroke: v("--muted"), grid: { stroke: v("--line"), width: 1 }, ticks: { stroke: v("--line"), width: 1 } };
  window.trusthubCharts = [];
  document.querySelectorAll("script.chart-data").forEach(function (s) {
    var d = JSON.parse(s.textContent);
    // Nothing in this range: the server's drawing says so.
    if (!d.y.some(function (ys) { return ys.some(function (y) { return y != null; }); })) return;
    var card = s.closest(".chart-card");
    var box = card.querySelector(".chart-box");
    var label = function (x) { return x == null ? "–" : short(x) + d.unit; };
    var series = [{}];
    d.series.forEach(function (name, i) {
      series.push({ label: name, stroke: strokes[i % 4], dash: dashes[i % 4], width: 1.5,
        value: function (u, x) { return label(x); } });
    });
    var opts = {
      width: box.clientWidth || 600,
      height: 200,
      scales: {
        x: { time: true },
        y: { range: function (u, lo, hi) { return [Math.min(d.min, lo || 0), d.max != null ? d.max : Math.max(hi || 0, 1)]; } }
      },
      axes: [Object.assign({}, axis),
        Object.assign({}, axis, { size: 64, values: function (u, ticks) { return ticks.map(label); } })],
      series: series,
      cursor: { drag: { x: true, y: false } },
      legend: { live: true }
    };
    var chart = new uPlot(opts, [d.x].concat(d.y), box);
    // The server's drawing stays in the page, out of sight.
    var svg = box.querySelector("svg.chart");
    if (svg) svg.style.display = "none";
    var legend = card.querySelector("ul.legend");
    if (legend) legend.style.display = "none";
    card.classList.add("interactive");
    window.trusthubCharts.push(chart);
  });
  var resize = function () {
    window.trusthubCharts.forEach(function (c) {
      var w = c.root.parentNode.clientWidth;
      if (w && Math.abs(w - c.width) > 4) c.setSize({ width: w, height: 200 });
    });
  };
  window.addEventListener("resize", resize);
});
