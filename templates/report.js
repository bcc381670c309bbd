// headroom report: draws every chart from the option JSON next to it.
// The options are data only (built by headroom with go-echarts); this is the
// page's only code besides ECharts itself. It records how many charts it
// drew in <html data-charts-drawn> and data-charts-failed, which the
// browser test reads.
//
// Charts fill their box: they are redrawn when the window changes width and
// when the page is laid out for print, so a chart is never wider than the
// page at 390 px, nor narrower than the sheet when printed.
(function () {
  "use strict";
  var drawn = 0, failed = 0, charts = [];
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
      charts.push(chart);
      drawn++;
    } catch (e) {
      failed++;
      el.className += " chart-error";
      el.textContent = "This chart could not be drawn (" + e.message + "); its numbers are in the table below it.";
      console.error("headroom: chart " + el.id + ": " + e.message);
    }
  }
  function resize() {
    for (var i = 0; i < charts.length; i++) {
      charts[i].resize();
    }
  }
  var pending = 0;
  window.addEventListener("resize", function () {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(resize);
  });
  // Printing lays the page out at the sheet's width: redraw at that width
  // before the sheet is made, and back after.
  window.addEventListener("beforeprint", resize);
  window.addEventListener("afterprint", resize);
  if (window.matchMedia) {
    var print = window.matchMedia("print");
    if (print.addEventListener) {
      print.addEventListener("change", resize);
    }
  }
  // For headroom's own PDF writer and browser test: redraw now.
  window.headroomResize = resize;
  document.documentElement.setAttribute("data-charts-drawn", String(drawn));
  document.documentElement.setAttribute("data-charts-failed", String(failed));
})();
