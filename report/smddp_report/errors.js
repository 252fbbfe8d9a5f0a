// First script on the page: records every error, console error or warning
// and blocked request in the DOM (html[data-errors], #report-errors), so a
// headless browser's --dump-dom shows them.
(function () {
  var errors = [];
  function show() {
    document.documentElement.setAttribute("data-errors", String(errors.length));
    var el = document.getElementById("report-errors");
    if (el && errors.length) { el.hidden = false; el.textContent = errors.join("\n"); }
  }
  function record(msg) {
    errors.push(String(msg));
    show();
  }
  window.__reportErrors = errors;
  window.__recordError = record;
  document.documentElement.setAttribute("data-errors", "0");
  window.addEventListener("error", function (e) {
    var t = e.target;
    record("error: " + (e.message || (t && (t.src || t.href)) || "a resource failed to load"));
  }, true);
  window.addEventListener("unhandledrejection", function (e) { record("unhandled rejection: " + e.reason); });
  document.addEventListener("securitypolicyviolation", function (e) {
    record("blocked request: " + e.blockedURI + " (" + e.violatedDirective + ")");
  });
  ["error", "warn"].forEach(function (level) {
    var orig = console[level];
    console[level] = function () {
      record("console." + level + ": " + Array.prototype.join.call(arguments, " "));
      return orig.apply(console, arguments);
    };
  });
  window.addEventListener("DOMContentLoaded", show);  // errors raised before #report-errors existed
})();
