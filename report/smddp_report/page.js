// Draws the report's charts from the embedded data, then writes into the DOM
// what was drawn: data-points on every figure (points inside the plot area),
// data-plots / data-status on <html>. Tests read them with --dump-dom.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);

  function bytes(v) {
    var units = [["G", 1 << 30], ["M", 1 << 20], ["K", 1 << 10]];
    for (var i = 0; i < units.length; i++) {
      if (v >= units[i][1]) return +(v / units[i][1]).toPrecision(3) + units[i][0];
    }
    return String(+Number(v).toPrecision(3));
  }

  function draw(canvas, spec) {
    var category = spec.xType === "category";
    var labels = [];
    spec.datasets.forEach(function (d) {
      d.points.forEach(function (p) { if (labels.indexOf(bytes(p[0])) < 0) labels.push(bytes(p[0])); });
    });
    var datasets = spec.datasets.map(function (d) {
      return {
        label: d.label,
        data: d.points.map(function (p) { return { x: category ? bytes(p[0]) : p[0], y: p[1] }; }),
        borderColor: d.colour,
        backgroundColor: d.fill ? d.colour + "33" : d.colour,
        borderDash: d.dash ? [6, 4] : [],
        borderWidth: d.reference ? 1 : 2,
        pointRadius: d.reference ? 0 : 3,
        showLine: true,
        fill: d.fill ? "-1" : false,
      };
    });
    // Ticks at the sizes measured (thinned to about a dozen), not at powers of 10.
    var sizes = [];
    spec.datasets.forEach(function (d) {
      d.points.forEach(function (p) { if (sizes.indexOf(p[0]) < 0) sizes.push(p[0]); });
    });
    sizes.sort(function (a, b) { return a - b; });
    var step = Math.max(1, Math.ceil(sizes.length / 12));
    var xAxis = category ? { type: "category", labels: labels } : {
      type: "logarithmic",
      min: sizes[0] / 1.5, max: sizes[sizes.length - 1] * 1.5,
      afterBuildTicks: function (axis) {
        axis.ticks = sizes.filter(function (v, i) { return i % step === 0; }).map(function (v) { return { value: v }; });
      },
      ticks: { callback: function (v) { return bytes(v); }, autoSkip: false, maxRotation: 0 },
    };
    xAxis.title = { display: true, text: spec.x };
    var yAxis = { type: spec.yType === "log" ? "logarithmic" : "linear", title: { display: true, text: spec.y } };
    if (spec.yType !== "log") yAxis.beginAtZero = true;
    return new Chart(canvas, {
      type: "line",
      data: { datasets: datasets },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false, parsing: true,
        interaction: { mode: "nearest", intersect: false },
        scales: { x: xAxis, y: yAxis },
        plugins: { title: { display: true, text: spec.title, font: { size: 15 } }, legend: { position: "bottom", labels: { boxWidth: 18, boxHeight: 8 } } },
      },
    });
  }

  // Points of counted (non-reference) datasets that landed inside the plot area.
  function drawnPoints(chart, spec) {
    var area = chart.chartArea, n = 0;
    spec.datasets.forEach(function (d, i) {
      if (d.reference) return;
      chart.getDatasetMeta(i).data.forEach(function (el) {
        if (isFinite(el.x) && isFinite(el.y) && el.x >= area.left - 1 && el.x <= area.right + 1 &&
            el.y >= area.top - 1 && el.y <= area.bottom + 1) n++;
      });
    });
    return n;
  }

  var figures = document.querySelectorAll("figure.plot");
  var drawn = 0;
  figures.forEach(function (fig) {
    try {
      var n = 0;
      if (fig.dataset.chart) {
        var spec = data.charts[fig.dataset.chart];
        var chart = draw(document.getElementById(fig.dataset.chart), spec);
        n = drawnPoints(chart, spec);
      } else {
        fig.querySelectorAll("rect.cell").forEach(function (r) {
          var b = r.getBoundingClientRect();
          if (b.width > 0 && b.height > 0) n++;
        });
      }
      fig.setAttribute("data-points", String(n));
      if (n > 0) drawn++;
    } catch (e) {
      fig.setAttribute("data-points", "0");
      window.__recordError("drawing " + (fig.dataset.chart || "heatmap") + ": " + e);
    }
  });
  document.documentElement.setAttribute("data-plots", String(figures.length));
  document.documentElement.setAttribute("data-drawn", String(drawn));
  document.documentElement.setAttribute("data-status", "done");
})();
