// headroom report: draws every chart from the option JSON next to it.
// The options are data only (built by headroom with go-echarts); this is the
// page's only code besides ECharts itself. It records how many charts it
// drew in <html data-charts-drawn> and data-charts-failed, which the
// browser test reads.
(function () {
  "use strict";
  var drawn = 0, failed = 0;
  var nodes = document.querySelectorAll('script[type="application/json"][data-chart]');
  for (var i = 0; i < nodes.length; i++) {
    var node = nodes[i];
    var el = document.getElementById(node.getAttribute("data-chart"));
    if (!el) {
      failed++;
      console.error("headroom: no element for chart " + node.getAttribute("data-chart"));
      continue;
    }
    try {
      if (typeof echarts === "undefined") {
        throw new Error("ECharts did not load");
      }
      // SVG prints sharp when the page is saved as PDF.
      var chart = echarts.init(el, null, { renderer: "svg" });
      chart.setOption(JSON.parse(node.textContent));
      drawn++;
    } catch (e) {
      failed++;
      el.className += " chart-error";
      el.textContent = "This chart could not be drawn (" + e.message + "); its numbers are in the table below it.";
      console.error("headroom: chart " + el.id + ": " + e.message);
    }
  }
  document.documentElement.setAttribute("data-charts-drawn", String(drawn));
  document.documentElement.setAttribute("data-charts-failed", String(failed));
})();
