// A console recording played in the page with asciinema-player (CONTRACT 22).
(function () {
  "use strict";
  var el = document.getElementById("player");
  if (!el || !window.AsciinemaPlayer) { return; }
  window.AsciinemaPlayer.create(el.dataset.src, el, {
    autoPlay: true,
    preload: true,
    idleTimeLimit: 1,
    fit: "width",
    terminalFontFamily: "monospace"
  });
})();
