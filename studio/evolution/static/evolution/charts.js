// Bars where people look rather than read (Chart.js, pinned in static/vendor/): a run's per-category scores and
// how its requests ended; a regression report's deltas with their 95% intervals. Drawn on load and again
// after htmx swaps in a new stage body (the stage page polls while runs go).
(function () {
  var COLORS = { accuracy: "#3056d3", effectiveness: "#16794c", avg: "#8a5a00" };
  var OUTCOME_COLORS = { effective: "#16794c", not_effective: "#7fbf9f", fallback: "#c0392b",
                         suppressed: "#8e44ad", silent: "#7f8c8d", error: "#2c3e50" };
  var NAMES = { accuracy: "Accuracy", effectiveness: "Effectiveness", avg: "AVG" };

  function readData(id) {
    var source = document.getElementById(id);
    return source ? JSON.parse(source.textContent) : null;
  }

  function draw(canvas, config, points) {
    if (!canvas || canvas.dataset.rendered === "yes") return;
    new Chart(canvas, config);
    canvas.dataset.rendered = "yes";
    canvas.dataset.points = String(points);
  }

  function runCharts() {
    var data = readData("run-chart-data");
    if (!data) return;
    var c = data.categories;
    draw(document.getElementById("run-category-chart"), {
      type: "bar",
      data: { labels: c.labels, datasets: ["accuracy", "effectiveness", "avg"].map(function (m) {
        return { label: NAMES[m], data: c[m], backgroundColor: COLORS[m] };
      }) },
      options: { animation: false, scales: { y: { min: 0, max: 100, title: { display: true, text: "%" } } } },
    }, c.labels.length);
    var o = data.outcomes;
    draw(document.getElementById("run-outcome-chart"), {
      type: "bar",
      data: { labels: o.labels, datasets: [{ label: "cases", data: o.counts,
        backgroundColor: o.keys.map(function (k) { return OUTCOME_COLORS[k]; }) }] },
      options: { animation: false, indexAxis: "y", plugins: { legend: { display: false } },
                 scales: { x: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "cases" } } } },
    }, o.labels.length);
  }

  function reportChart() {
    var data = readData("report-chart-data");
    if (!data) return;
    var datasets = [];
    ["accuracy", "effectiveness", "avg"].forEach(function (m) {
      datasets.push({ type: "bar", label: NAMES[m] + " 95% interval", backgroundColor: COLORS[m] + "55",
                      borderColor: COLORS[m], borderWidth: 1,
                      data: data[m].map(function (b) { return [b.low, b.high]; }) });
      datasets.push({ type: "line", label: NAMES[m] + " Δ", showLine: false, pointRadius: 4,
                      pointBackgroundColor: COLORS[m], borderColor: COLORS[m],
                      data: data[m].map(function (b) { return b.delta; }) });
    });
    draw(document.getElementById("report-chart"), {
      type: "bar",
      data: { labels: data.labels, datasets: datasets },
      options: { animation: false, scales: { y: { title: { display: true, text: "Δ points (candidate − parent)" } } } },
    }, data.labels.length);
  }

  function all() {
    if (typeof Chart === "undefined") return;
    runCharts();
    reportChart();
  }

  all();
  document.addEventListener("htmx:afterSettle", all);
})();
