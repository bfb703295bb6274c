// The evolution record chart: Accuracy and Effectiveness per stage, a line over the named stages drawn by
// the studio's line-chart module (static/studio/linechart.js, over the Chart.js pinned in static/vendor/).
(function () {
  var canvas = document.getElementById("record-chart");
  var source = document.getElementById("record-chart-data");
  if (!canvas || !source || typeof Chart === "undefined" || !window.StudioCharts) return;
  var data = JSON.parse(source.textContent);
  function series(name, values) {
    return { name: name, points: values.map(function (v, i) { return [i, v]; }) };
  }
  var COLORS = StudioCharts.COLORS;
  StudioCharts.line(canvas, [series("Accuracy", data.accuracy), series("Effectiveness", data.effectiveness)], {
    xLabel: "stage", xNames: data.labels, yLabel: "%", ySuggested: [50, 100],
    style: function (s, i) { return { borderColor: COLORS[i * 2], backgroundColor: COLORS[i * 2], tension: 0 }; },
  });
  canvas.dataset.rendered = "yes";
  canvas.dataset.points = String(data.labels.length);
})();
