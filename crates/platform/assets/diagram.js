// Renders every <pre class="mermaid"> of the page with the vendored Mermaid (no inline
// script: the page's policy allows only the hub's own). Labels are sanitised (strict).
(function () {
  if (typeof mermaid === "undefined") { return; }
  mermaid.initialize({
    startOnLoad: false,
    securityLevel: "strict",
    theme: window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "default",
    // A topology of a thousand hosts is longer than Mermaid's defaults allow.
    maxTextSize: 5000000,
    maxEdges: 100000,
    flowchart: { useMaxWidth: true }
  });
  var nodes = document.querySelectorAll("pre.mermaid");
  if (nodes.length === 0) { return; }
  mermaid.run({ nodes: nodes, suppressErrors: true }).then(function () {
    document.body.setAttribute("data-diagrams", "rendered");
  }, function (e) {
    document.body.setAttribute("data-diagrams", "failed");
    var out = document.getElementById("diagram-error");
    if (out) { out.textContent = "This diagram could not be drawn: " + (e && e.message ? e.message : e); out.hidden = false; }
  });
})();
