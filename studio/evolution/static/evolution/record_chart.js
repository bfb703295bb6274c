// The evolution record chart: Accuracy and Effectiveness per stage (Chart.js, pinned in static/vendor/).
(function () {
  var canvas = document.getElementById("record-chart");
  var source = document.getElementById("record-chart-data");
  if (!canvas || !source || typeof Chart === "undefined") return;
  var data = JSON.parse(source.textContent);
  new Chart(canvas, {
    type: "line",
    data: {
      labels: data.labels,
      datasets: [
        { label: "Accuracy", data: data.accuracy, borderColor: "#3056d3", backgroundColor: "#3056d3", tension: 0 },
        { label: "Effectiveness", data: data.effectiveness, borderColor: "#16794c", backgroundColor: "#16794c", tension: 0 },
      ],
    },
    options: { animation: false, scales: { y: { suggestedMin: 50, suggestedMax: 100, title: { display: true, text: "%" } } } },
  });
  canvas.dataset.rendered = "yes";
  canvas.dataset.points = String(data.labels.length);
})();
