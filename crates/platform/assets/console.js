// The emergency console page: an xterm.js terminal wired to the session's WebSocket
// (CONTRACT 22). Frames: {type: "input", data} and {type: "resize", cols, rows} out;
// {type: "output", data} and {type: "exit", code} in.
(function () {
  "use strict";
  var el = document.getElementById("console");
  if (!el || !window.Terminal) { return; }
  var status = document.getElementById("console-status");
  var cols = parseInt(el.dataset.cols, 10) || 80;
  var rows = parseInt(el.dataset.rows, 10) || 24;
  var term = new window.Terminal({ cols: cols, rows: rows, cursorBlink: true, scrollback: 5000 });
  term.open(el);
  var url = new URL(el.dataset.ws, window.location.href);
  url.protocol = window.location.protocol === "https:" ? "wss:" : "ws:";
  url.host = window.location.host;
  var ws = new WebSocket(url.toString());
  var say = function (text) { if (status) { status.textContent = text; } };
  ws.onopen = function () { say("Connected: everything shown here is recorded."); term.focus(); };
  ws.onmessage = function (ev) {
    var msg;
    try { msg = JSON.parse(ev.data); } catch (e) { return; }
    if (msg.type === "output") { term.write(msg.data); }
    if (msg.type === "exit") {
      var code = msg.code === null || msg.code === undefined ? "none" : msg.code;
      term.write("\r\n[session ended, exit code " + code + "]\r\n");
      say("The session ended (exit code " + code + ").");
      el.dataset.ended = "true";
    }
  };
  ws.onclose = function () { if (el.dataset.ended !== "true") { say("The connection closed."); } };
  term.onData(function (data) {
    if (ws.readyState === WebSocket.OPEN) { ws.send(JSON.stringify({ type: "input", data: data })); }
  });
  term.onResize(function (size) {
    if (ws.readyState === WebSocket.OPEN) {
      ws.send(JSON.stringify({ type: "resize", cols: size.cols, rows: size.rows }));
    }
  });
})();
