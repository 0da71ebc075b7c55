// The approval inbox's only script. No inline code anywhere: the CSP forbids it.
// - A button with data-confirm (Reject, Decline: they end the task, a deploy rolls back) asks
//   in a dialog first and, once confirmed, sends its form's `confirm` field; without this
//   script the server asks on a page of its own instead.
// - A form's buttons that send an answer stay disabled until its required fields are valid.
// - The page follows its event stream and swaps in the fresh fragment when something changed.
"use strict";
(function () {
  document.addEventListener("click", function (e) {
    var button = e.target instanceof Element ? e.target.closest("button[data-confirm]") : null;
    if (!button || !button.form) return;
    if (!window.confirm(button.getAttribute("data-confirm"))) {
      e.preventDefault();
      return;
    }
    var confirmed = button.form.querySelector("input[name=confirm]");
    if (confirmed) confirmed.value = button.value;
  });

  function checkForm(form) {
    var valid = form.checkValidity();
    Array.prototype.forEach.call(form.querySelectorAll("button.needs-valid"), function (send) {
      send.disabled = !valid;
      send.title = valid ? "" : "Fill in the required fields first";
    });
  }
  function checkForms() {
    Array.prototype.forEach.call(document.querySelectorAll("form.answer"), checkForm);
  }
  ["input", "change"].forEach(function (type) {
    document.addEventListener(type, function (e) {
      var form = e.target instanceof Element ? e.target.closest("form.answer") : null;
      if (form) checkForm(form);
    });
  });
  checkForms();

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
        checkForms();
      })
      .catch(function () { /* the next event tries again */ });
  }

  var source = new EventSource(live);
  source.addEventListener("list", function (e) {
    var data = JSON.parse(e.data);
    var list = document.getElementById("list");
    if (list && list.getAttribute("data-version") !== data.version) {
      swap("list", "/inbox/fragments/list" + window.location.search);
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
  source.addEventListener("end", function (e) {
    source.close();
    // Signed out meanwhile (a revoked token, a changed tokens file): the page shows sign-in.
    if (JSON.parse(e.data).reason === "signed-out") window.location.reload();
  });
})();
