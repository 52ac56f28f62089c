// Package web holds the static files of kvcfg's planner page: index.html,
// app.js, style.css and the vendored Chart.js, built into the binary with
// go:embed so the page works offline and needs no build step.
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var static embed.FS

// FS returns the page's files rooted at static/ (index.html at the top).
func FS() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		// fs.Sub fails only for an invalid path; "static" is valid.
		return static
	}
	return sub
}

// ChartJSVersion is the version of the vendored Chart.js
// (static/vendor/chart.umd.min.js, refreshed by scripts/vendor-chartjs.sh).
const ChartJSVersion = "4.6.1"
