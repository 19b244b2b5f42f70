// Trusthub dashboard: copy buttons. The only script besides htmx; no inline code anywhere.
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
