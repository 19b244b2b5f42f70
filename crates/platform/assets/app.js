// Trusthub dashboard: copy buttons and confirmations. The only script besides htmx; no
// inline code anywhere.
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

// Confirmations: a form with data-confirm asks before it is sent (untrack, expect stopped,
// delete); without script the form is sent as it is.
document.addEventListener("submit", function (e) {
  var f = e.target.closest("form[data-confirm]");
  if (f && !window.confirm(f.getAttribute("data-confirm"))) e.preventDefault();
});
