// The approval inbox's only script: follow the page's event stream and swap in the fresh
// fragment when something changed (no reload). No inline code anywhere: the CSP forbids it.
"use strict";
(function () {
  var live = document.body.getAttribute("data-live");
  if (!live || !window.EventSource || !window.fetch) return;

  function swap(id, url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        var old = document.getElementById(id);
        if (html === null || !old) return;
        var holder = document.createElement("div");
        holder.innerHTML = html;
        var fresh = holder.firstElementChild;
        if (fresh && fresh.id === id) old.replaceWith(fresh);
      })
      .catch(function () { /* the next event tries again */ });
  }

  var source = new EventSource(live);
  source.addEventListener("list", function (e) {
    var data = JSON.parse(e.data);
    var list = document.getElementById("list");
    if (list && list.getAttribute("data-version") !== data.version) {
      swap("list", "/inbox/fragments/list");
    }
  });
  source.addEventListener("task", function (e) {
    var data = JSON.parse(e.data);
    var part = document.getElementById("live");
    if (!part) return;
    var base = window.location.pathname.replace(/\/$/, "");
    var forms = part.getAttribute("data-forms");
    if (part.getAttribute("data-version") !== data.version) swap("live", base + "/live");
    if (forms !== data.forms) swap("forms", base + "/forms");
  });
  source.addEventListener("end", function () { source.close(); });
})();
