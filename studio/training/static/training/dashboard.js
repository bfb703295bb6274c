// A training run's curves (StudioCharts in studio/linechart.js): one chart per metric group, drawn from
// the run's metrics endpoint, already downsampled on the server; polled every 2 s while the run goes.
(function () {
  var root = document.getElementById("dashboard");
  if (!root || typeof Chart === "undefined" || !window.StudioCharts) return;
  var charts = {};
  // checkpoints, the best one, the final model, evaluations and stage boundaries: vertical lines on every chart;
  // each held-out evaluation (an eval_loss row) a tick at the foot of every chart and a dot on the eval_loss curve
  var marks = [];
  var MARK_COLORS = { checkpoint: "#7f8c8d", final: "#16794c", eval: "#c0392b", stage: "#8a5a00",
                      evaluation: "#3056d3", best: "#d35400" };
  var markPlugin = {
    id: "runMarks",
    afterDatasetsDraw: function (chart) {
      var x = chart.scales.x, area = chart.chartArea, ctx = chart.ctx;
      ctx.save();
      marks.forEach(function (m) {
        var px = x.getPixelForValue(m.x);
        if (px < area.left - 1 || px > area.right + 1) return;
        ctx.strokeStyle = MARK_COLORS[m.kind] || "#333";
        ctx.setLineDash(m.kind === "checkpoint" ? [2, 3] : m.kind === "best" || m.kind === "evaluation" ? [] : [5, 3]);
        ctx.lineWidth = m.kind === "eval" || m.kind === "best" ? 2 : 1;
        var top = m.kind === "evaluation" ? area.bottom - 8 : area.top;
        ctx.beginPath(); ctx.moveTo(px, top); ctx.lineTo(px, area.bottom); ctx.stroke();
      });
      ctx.restore();
    },
  };

  function listMarks() {
    var list = document.getElementById("dashboard-marks");
    if (!list) return;
    list.innerHTML = "";
    marks.forEach(function (m) {
      var li = document.createElement("li");
      li.dataset.kind = m.kind;
      li.textContent = "step " + m.x + ": " + m.label + (m.stage ? " (" + m.stage + ")" : "");
      li.style.color = MARK_COLORS[m.kind] || "";
      if (m.kind === "best") li.style.fontWeight = "bold";
      list.appendChild(li);
    });
  }

  // the smoothed loss and the held-out eval_* curves stand out; each evaluation is a dot
  function style(s) {
    var smoothed = / \(smoothed\)$/.test(s.name), evaluated = /^eval_/.test(s.name);
    return { borderWidth: smoothed || evaluated ? 2 : 1, pointRadius: evaluated ? 3 : 0, borderDash: [], showLine: true,
             order: smoothed ? 0 : 1 };
  }

  function draw(data) {
    var holder = document.getElementById("dashboard-charts");
    marks = (data.marks || []).concat((data.boundaries || []).filter(function (b) { return b.x > 0; })
      .map(function (b) { return { x: b.x, kind: "stage", label: "start of " + b.name }; }));
    listMarks();
    data.charts.forEach(function (chart) {
      var existing = charts[chart.key];
      if (existing) {
        StudioCharts.update(existing, chart.series, style);
      } else {
        var box = document.createElement("div");
        box.innerHTML = "<h3></h3><canvas height='170'></canvas>";
        box.querySelector("h3").textContent = chart.title;
        var canvas = box.querySelector("canvas");
        canvas.id = "chart-" + chart.key;
        holder.appendChild(box);
        charts[chart.key] = StudioCharts.line(canvas, chart.series, { style: style, plugins: [markPlugin] });
      }
      var canvasEl = document.getElementById("chart-" + chart.key);
      canvasEl.dataset.points = String(chart.series[0].points.length);
      canvasEl.dataset.n = String(chart.series[0].n);
    });
    var p = data.progress, bar = document.getElementById("run-bar"), text = document.getElementById("run-progress");
    if (bar) bar.style.width = p.percent + "%";
    if (text) text.textContent = "step " + p.steps_done + "/" + p.steps_total + (p.eta ? " · " + p.eta : "");
    root.dataset.rows = String(data.rows);
    return data.active;
  }

  function poll() {
    fetch(root.dataset.url, { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (data) {
        if (draw(data)) setTimeout(poll, 2000);
        else if (root.dataset.active === "yes") { root.dataset.active = "no"; setTimeout(function () { location.reload(); }, 500); }
      })
      .catch(function () { setTimeout(poll, 5000); });
  }
  poll();
})();
