// overtake console: live updates over server-sent events, and the action
// token. The server renders (and escapes) all HTML; this file only swaps
// in the live part of the page it receives from the same origin.
(function () {
  "use strict";
  var live = document.getElementById("live");
  var status = document.getElementById("status");
  function setStatus(text, cls) {
    if (status) { status.textContent = text; status.className = "status " + cls; }
  }
  if (live && live.dataset.events && window.EventSource) {
    var es = new EventSource(live.dataset.events);
    es.onopen = function () { setStatus("live", "on"); };
    es.onerror = function () { setStatus("reconnecting…", "off"); };
    es.addEventListener("live", function (e) {
      live.innerHTML = e.data;
      live.dataset.updated = String(Date.now());
      setStatus("live", "on");
    });
    es.addEventListener("problem", function (e) { setStatus(e.data, "off"); });
  } else {
    setStatus("not live", "off");
  }

  // The token lives in this tab only (sessionStorage) and is copied into
  // an action's form when it is sent.
  var tok = document.getElementById("token");
  var key = "overtake-console-token";
  if (tok) {
    try { tok.value = sessionStorage.getItem(key) || ""; } catch (err) { /* storage off */ }
    tok.addEventListener("input", function () {
      try { sessionStorage.setItem(key, tok.value); } catch (err) { /* storage off */ }
    });
  }
  document.addEventListener("submit", function (e) {
    var f = e.target;
    if (!f.classList || !f.classList.contains("act")) { return; }
    var field = f.querySelector("input[name=token]");
    if (field && tok) { field.value = tok.value; }
    if (tok && !tok.value) {
      e.preventDefault();
      tok.focus();
      tok.classList.add("need");
    }
  });
})();
