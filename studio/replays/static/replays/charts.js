// A replay's charts (StudioCharts in studio/linechart.js): the data is computed and bounded on the server
// and sits in the page (#replay-chart-data), in the training dashboard's shape
// [{key, title, series: [{name, points, n}]}] plus axis labels. A replay still running reloads its page every 3 s.
(function () {
  var root = document.getElementById("replay-dashboard");
  if (!root) return;
  if (root.dataset.active === "yes") setTimeout(function () { location.reload(); }, 3000);
  var source = document.getElementById("replay-chart-data");
  if (!source || typeof Chart === "undefined" || !window.StudioCharts) return;

  JSON.parse(source.textContent).forEach(function (chart) {
    var canvas = document.getElementById("chart-" + chart.key);
    if (!canvas) return;
    StudioCharts.line(canvas, chart.series, {
      xLabel: chart.x_label, xStep: chart.x_step, yLabel: chart.y_label, yFromZero: true,
      style: function () {
        return { borderWidth: 2, pointRadius: chart.stepped ? 0 : 3, stepped: chart.stepped ? "before" : false };
      },
    });
    canvas.dataset.series = String(chart.series.length);
    canvas.dataset.points = String(chart.series.reduce(function (sum, s) { return sum + s.points.length; }, 0));
    canvas.dataset.drawn = "yes";
  });
})();
