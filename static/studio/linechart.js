// The studio's line charts over Chart.js (static/vendor/chart-4.4.7.umd.min.js, loaded first): one palette,
// the server's series [{name, points: [[x, y], ...], n, axis?, axis_title?}] (already bounded and downsampled
// there; axis: a pipeline stage's own y axis) as datasets,
// and a linear x axis with its title. The training dashboard (training/dashboard.js), the replay
// dashboard (replays/charts.js) and the evolution record (evolution/record_chart.js, named stages on x)
// draw with it; each passes only what differs (a style per series, y axis, plugins). bar() draws the
// ablation dashboard's bars (training/ablation.js) the same way (no animation, the same palette).
window.StudioCharts = (function () {
  var COLORS = ["#3056d3", "#c0392b", "#16794c", "#8a5a00", "#8e44ad", "#2c3e50", "#d35400", "#7f8c8d"];

  function datasets(series, style) {
    return series.map(function (s, i) {
      var color = COLORS[i % COLORS.length];
      var dataset = { label: s.name, data: s.points.map(function (p) { return { x: p[0], y: p[1] }; }),
                      borderColor: color, backgroundColor: color, parsing: false };
      if (s.axis) dataset.yAxisID = "y" + s.axis;  // a pipeline stage's own y axis (axis 0 is "y")
      return Object.assign(dataset, style ? style(s, i) : {});
    });
  }

  // options: xLabel ("step"), xStep, xNames (x = 0, 1, ... shown as these names), yLabel, yFromZero,
  // ySuggested ([min, max]), style(series, i) -> dataset fields, plugins.
  // A series with an axis (a pipeline's stage: {axis, axis_title}) gets a y axis of its own, titled with
  // its stage, alternately left and right, so stages of very different scales each fill the chart.
  function line(canvas, series, options) {
    options = options || {};
    var y = {};
    if (options.yFromZero) y.beginAtZero = true;
    if (options.yLabel) y.title = { display: true, text: options.yLabel };
    if (options.ySuggested) { y.suggestedMin = options.ySuggested[0]; y.suggestedMax = options.ySuggested[1]; }
    var ticks = options.xStep ? { stepSize: options.xStep } : {};
    if (options.xNames) {
      ticks = { stepSize: 1, callback: function (value) { return options.xNames[value]; } };
    }
    var scales = { x: { type: "linear", title: { display: true, text: options.xLabel || "step" }, ticks: ticks },
                   y: y };
    stageAxes(scales, series);
    return new Chart(canvas, {
      type: "line", data: { datasets: datasets(series, options.style) }, plugins: options.plugins || [],
      options: { animation: false, normalized: true, interaction: { mode: "nearest", intersect: false },
                 scales: scales },
    });
  }

  // the y axis of each stage the series name (a running pipeline's next stage gets one when it starts)
  function stageAxes(scales, series) {
    series.forEach(function (s) {
      if (s.axis === undefined) return;
      var id = s.axis ? "y" + s.axis : "y";
      scales[id] = Object.assign({}, scales[id] || {}, {
        position: s.axis % 2 ? "right" : "left", grid: { drawOnChartArea: !s.axis },
        title: { display: true, text: s.axis_title } });
    });
    return scales;
  }

  function update(chart, series, style) {
    stageAxes(chart.options.scales, series);
    chart.data.datasets = datasets(series, style);
    chart.update("none");
  }

  // A bar chart of labels x datasets ([{label, data, backgroundColor?}]); a dataset without a colour
  // takes the palette's. options: yLabel, yRange ([min, max]), horizontal, legend (default shown).
  function bar(canvas, labels, sets, options) {
    options = options || {};
    var scales = {};
    if (options.yLabel || options.yRange) {
      scales.y = {};
      if (options.yRange) { scales.y.min = options.yRange[0]; scales.y.max = options.yRange[1]; }
      if (options.yLabel) scales.y.title = { display: true, text: options.yLabel };
    }
    var chartOptions = { animation: false, scales: scales };
    if (options.horizontal) chartOptions.indexAxis = "y";
    if (options.legend === false) chartOptions.plugins = { legend: { display: false } };
    return new Chart(canvas, {
      type: "bar",
      data: { labels: labels, datasets: sets.map(function (d, i) {
        return Object.assign({ backgroundColor: COLORS[i % COLORS.length] }, d);
      }) },
      options: chartOptions,
    });
  }

  return { COLORS: COLORS, datasets: datasets, line: line, update: update, bar: bar };
})();
