// A replay's charts (Chart.js, the build pinned in evolution/vendor/ that the training dashboard uses):
// the data is computed and bounded on the server and sits in the page (#replay-chart-data), in the
// training dashboard's shape [{key, title, series: [{name, points, n}]}] plus axis labels. A replay
// still running reloads its page every 3 s.
(function () {
  var root = document.getElementById("replay-dashboard");
  if (!root) return;
  if (root.dataset.active === "yes") setTimeout(function () { location.reload(); }, 3000);
  var source = document.getElementById("replay-chart-data");
  if (!source || typeof Chart === "undefined") return;
  var COLORS = ["#3056d3", "#c0392b", "#16794c", "#8a5a00", "#8e44ad", "#2c3e50", "#d35400", "#7f8c8d"];

  JSON.parse(source.textContent).forEach(function (chart) {
    var canvas = document.getElementById("chart-" + chart.key);
    if (!canvas) return;
    new Chart(canvas, {
      type: "line",
      data: { datasets: chart.series.map(function (s, i) {
        return { label: s.name, data: s.points.map(function (p) { return { x: p[0], y: p[1] }; }),
                 borderColor: COLORS[i % COLORS.length], backgroundColor: COLORS[i % COLORS.length],
                 borderWidth: 2, pointRadius: chart.stepped ? 0 : 3, stepped: chart.stepped ? "before" : false,
                 parsing: false };
      }) },
      options: { animation: false, normalized: true, interaction: { mode: "nearest", intersect: false },
                 scales: { x: { type: "linear", title: { display: true, text: chart.x_label },
                               ticks: chart.x_step ? { stepSize: chart.x_step } : {} },
                           y: { beginAtZero: true, title: { display: true, text: chart.y_label } } } },
    });
    canvas.dataset.series = String(chart.series.length);
    canvas.dataset.points = String(chart.series.reduce(function (sum, s) { return sum + s.points.length; }, 0));
    canvas.dataset.drawn = "yes";
  });
})();
