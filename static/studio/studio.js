// Harness Studio's one page script. The Content-Security-Policy allows no inline script or
// handler attribute, so behaviour is declared with data attributes and wired here; values reach
// the script as attribute text (HTML-escaped by Django), never as JavaScript source.
//   data-confirm="..."   on a form or a button: ask before submitting
//   data-autosubmit      on a select: submit its form when the choice changes
//   data-swap-400        on an htmx target: swap in a 400 answer too (it carries the reason)
//   .code-editor         line numbers for the file editor, with problem lines marked
(function () {
  function setupEditor(box) {
    var textarea = box.querySelector("textarea");
    var gutter = box.querySelector(".gutter");
    var bad = new Set(JSON.parse(box.dataset.problemLines || "[]"));
    function render() {
      var count = textarea.value.split("\n").length;
      gutter.textContent = "";
      for (var i = 1; i <= count; i++) {
        if (i > 1) gutter.appendChild(document.createTextNode("\n"));
        if (bad.has(i)) {
          var mark = document.createElement("span");
          mark.className = "bad";
          mark.title = "problem at this line";
          mark.textContent = String(i);
          gutter.appendChild(mark);
        } else {
          gutter.appendChild(document.createTextNode(String(i)));
        }
      }
    }
    textarea.addEventListener("input", render);
    textarea.addEventListener("scroll", function () { gutter.scrollTop = textarea.scrollTop; });
    textarea.addEventListener("keydown", function (event) {
      if ((event.ctrlKey || event.metaKey) && event.key === "s") { event.preventDefault(); textarea.form.requestSubmit(); }
    });
    render();
  }

  // Delegated on the document, so forms htmx swaps in later are covered too.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var button = event.submitter;
    var question = (button && button.dataset.confirm) || form.dataset.confirm;
    if (question && !window.confirm(question)) { event.preventDefault(); event.stopImmediatePropagation(); }
  }, true);
  document.addEventListener("change", function (event) {
    var select = event.target;
    if (select.matches && select.matches("select[data-autosubmit]") && select.form) { select.form.requestSubmit(); }
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (event.detail.xhr.status === 400 && target && target.closest("[data-swap-400]")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".code-editor").forEach(setupEditor);
  });
})();
