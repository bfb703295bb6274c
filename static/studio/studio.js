// Harness Studio: line numbers for the file editor, with problem lines marked.
(function () {
  function setup(box) {
    var textarea = box.querySelector("textarea");
    var gutter = box.querySelector(".gutter");
    var bad = new Set(JSON.parse(box.dataset.problemLines || "[]"));
    function render() {
      var count = textarea.value.split("\n").length;
      var out = [];
      for (var i = 1; i <= count; i++) {
        out.push(bad.has(i) ? '<span class="bad" title="problem at this line">' + i + "</span>" : String(i));
      }
      gutter.innerHTML = out.join("\n");
    }
    textarea.addEventListener("input", render);
    textarea.addEventListener("scroll", function () { gutter.scrollTop = textarea.scrollTop; });
    textarea.addEventListener("keydown", function (event) {
      if ((event.ctrlKey || event.metaKey) && event.key === "s") { event.preventDefault(); textarea.form.requestSubmit(); }
    });
    render();
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".code-editor").forEach(setup);
  });
})();
