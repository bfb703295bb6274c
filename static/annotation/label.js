// Labelling from the keyboard (templates/annotation/item_label.html): 0 / 1 set Accuracy, z / x / c set
// Effectiveness 0 / 0.5 / 1, Enter (Ctrl+Enter inside the note) saves and opens the next case. Keys typed
// into a text field are left alone. No inline script: the page's CSP forbids it.
(function () {
  "use strict";
  var form = document.getElementById("label-form");
  if (!form) return;
  var keys = { "0": "acc-0", "1": "acc-1", "z": "eff-0", "x": "eff-05", "c": "eff-1" };
  function typing(target) {
    var tag = (target && target.tagName || "").toLowerCase();
    return tag === "textarea" || (tag === "input" && target.type === "text") || tag === "select";
  }
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.metaKey) return;
    if (event.key === "Enter" && (event.ctrlKey || !typing(event.target))) {
      event.preventDefault();
      form.requestSubmit();
      return;
    }
    if (typing(event.target) || event.ctrlKey) return;
    var id = keys[event.key.toLowerCase()];
    if (id) {
      document.getElementById(id).checked = true;
      event.preventDefault();
    }
  });
  form.dataset.keyboard = "ready";
})();
