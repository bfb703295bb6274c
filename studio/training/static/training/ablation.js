// The ablation dashboard's charts (Chart.js, pinned in static/vendor/): scores per evaluation set and
// model, and the wall time of each step, from the data the page carries (ablation-chart-data).
(function () {
  var holder = document.getElementById("ablation-chart-data");
  if (!holder || typeof Chart === "undefined") return;
  var data = JSON.parse(holder.textContent);
  var COLORS = ["#7f8c8d", "#c0392b", "#3056d3", "#16794c", "#8e44ad"];
  new Chart(document.getElementById("ablation-chart"), {
    type: "bar",
    data: { labels: data.sets, datasets: data.models.map(function (m, i) {
      return { label: m.label, data: m.scores, backgroundColor: COLORS[i % COLORS.length] };
    }) },
    options: { animation: false, scales: { y: { min: 0, max: 100, title: { display: true, text: "score x100" } } } },
  });
  var done = data.steps.filter(function (s) { return s.wall_s !== null; });
  new Chart(document.getElementById("ablation-steps-chart"), {
    type: "bar",
    data: { labels: done.map(function (s) { return s.name; }),
            datasets: [{ label: "seconds", data: done.map(function (s) { return s.wall_s; }), backgroundColor: "#3056d3" }] },
    options: { animation: false, indexAxis: "y", plugins: { legend: { display: false } } },
  });
})();
