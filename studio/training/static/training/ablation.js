// The ablation dashboard's charts, drawn by the studio's one chart module (static/studio/linechart.js,
// StudioCharts.bar): scores per evaluation set and model, and the wall time of each step, from the
// data the page carries (ablation-chart-data).
(function () {
  var holder = document.getElementById("ablation-chart-data");
  if (!holder || typeof StudioCharts === "undefined") return;
  var data = JSON.parse(holder.textContent);
  var COLORS = ["#7f8c8d", "#c0392b", "#3056d3", "#16794c", "#8e44ad"];  // Base in grey first
  StudioCharts.bar(document.getElementById("ablation-chart"), data.sets, data.models.map(function (m, i) {
    return { label: m.label, data: m.scores, backgroundColor: COLORS[i % COLORS.length] };
  }), { yRange: [0, 100], yLabel: "score x100" });
  var done = data.steps.filter(function (s) { return s.wall_s !== null; });
  StudioCharts.bar(document.getElementById("ablation-steps-chart"), done.map(function (s) { return s.name; }),
    [{ label: "seconds", data: done.map(function (s) { return s.wall_s; }), backgroundColor: "#3056d3" }],
    { horizontal: true, legend: false });
})();
