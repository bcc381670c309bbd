// Package templates holds the report templates and static assets, embedded
// into the binary so a report needs no files and no network. README.md says
// where each asset comes from.
package templates

import "embed"

// FS holds every template and asset.
//
//go:embed *.tmpl report.css report.js
var FS embed.FS

// EChartsJS is Apache ECharts 5.6.0 (dist/echarts.min.js of the npm
// package, unmodified), inlined into report.html.
//
//go:embed echarts.min.js
var EChartsJS string

// EChartsVersion is the version of EChartsJS.
const EChartsVersion = "5.6.0"
