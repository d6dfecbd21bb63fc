(function () {
  "use strict";
  // Filters of the driftscan HTML report. They hide rows; nothing is fetched
  // or sent. The filters are mirrored in the URL's fragment, so a link can
  // open the page filtered: report.html#class=human&owner=team-web.
  var all = function (sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); };
  var keys = { "class": "f-class", owner: "f-owner", ns: "f-ns", status: "f-status", q: "f-q" };
  var el = {};
  Object.keys(keys).forEach(function (k) { el[k] = document.getElementById(keys[k]); });
  var has = function (text, q) { return !q || text.toLowerCase().indexOf(q) >= 0; };

  function apply() {
    var c = el["class"].value, o = el.owner.value, n = el.ns.value, s = el.status.value;
    var q = el.q.value.trim().toLowerCase();
    var shown = 0, total = 0, anyShown = false;
    all("section.app").forEach(function (app) {
      var appShown = false;
      all("tbody.obj", app).forEach(function (ob) {
        var d = ob.dataset;
        var ok = (!o || d.owner === o) && (!n || d.ns === n) && (!s || d.status === s);
        var headMatch = has(ob.rows[0].textContent, q);
        var rows = all("tr.f", ob), visible = 0;
        rows.forEach(function (r) {
          var extra = [], t = r.textContent;
          for (var x = r.nextElementSibling; x && x.classList.contains("x"); x = x.nextElementSibling) {
            extra.push(x);
            t += " " + x.textContent;
          }
          var v = ok && (!c || r.dataset["class"] === c) && (headMatch || has(t, q));
          total++;
          if (v) { visible++; }
          r.hidden = !v;
          extra.forEach(function (x) { x.hidden = !v; });
        });
        var obShown = visible > 0 || (ok && !c && headMatch && (rows.length === 0 || !q));
        ob.hidden = !obShown;
        shown += visible;
        appShown = appShown || obShown;
      });
      if (!appShown && app.hasAttribute("data-error")) {
        appShown = !c && !n && (!s || s === "Error") && (!o || app.dataset.owner === o) && has(app.textContent, q);
      }
      app.hidden = !appShown;
      anyShown = anyShown || appShown;
    });
    all("tr.debt").forEach(function (r) { r.hidden = !!o && r.dataset.owner !== o; });
    all("button.chip").forEach(function (b) { b.classList.toggle("on", b.dataset["class"] === c); });
    document.getElementById("shown").textContent = "showing " + shown + " of " + total + " findings";
    document.getElementById("nothing").hidden = anyShown;
    var frag = [];
    Object.keys(keys).forEach(function (k) {
      if (el[k].value) { frag.push(k + "=" + encodeURIComponent(el[k].value)); }
    });
    try { history.replaceState(null, "", frag.length ? "#" + frag.join("&") : location.pathname + location.search); } catch (e) { /* file:// in some browsers */ }
  }

  function fromFragment() {
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var i = kv.indexOf("="), k = kv.slice(0, i), v;
      if (i < 0 || !el[k]) { return; }
      try { v = decodeURIComponent(kv.slice(i + 1)); } catch (e) { return; }
      if (el[k].tagName === "SELECT" && !all("option", el[k]).some(function (opt) { return opt.value === v; })) { return; }
      el[k].value = v;
    });
  }

  Object.keys(el).forEach(function (k) { el[k].addEventListener(k === "q" ? "input" : "change", apply); });
  all("button.chip").forEach(function (b) {
    b.addEventListener("click", function () {
      el["class"].value = el["class"].value === b.dataset["class"] ? "" : b.dataset["class"];
      apply();
    });
  });
  window.addEventListener("hashchange", function () { fromFragment(); apply(); });
  fromFragment();
  apply();
})();
