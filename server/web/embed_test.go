package web_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/server/web"
)

// chartJSSHA256 is the SHA-256 of dist/chart.umd.min.js in the npm tarball
// of chart.js 4.6.1, as scripts/vendor-chartjs.sh copies it. The test fails
// if the vendored file was edited by hand.
const chartJSSHA256 = "87364cc2b2a76a6684929e7d6b80b18a897794db38400caff1fcf1791c6925d2"

func TestFSFiles(t *testing.T) {
	for _, name := range []string{"index.html", "app.js", "style.css", "vendor/chart.umd.min.js", "vendor/LICENSE.md"} {
		b, err := fs.ReadFile(web.FS(), name)
		if err != nil {
			t.Errorf("ReadFile(%q): %v", name, err)
			continue
		}
		if len(b) == 0 {
			t.Errorf("%s is empty", name)
		}
	}
}

func TestVendoredChartJS(t *testing.T) {
	b, err := fs.ReadFile(web.FS(), "vendor/chart.umd.min.js")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != chartJSSHA256 {
		t.Errorf("vendor/chart.umd.min.js sha256 = %s, want %s (refresh only with scripts/vendor-chartjs.sh)", got, chartJSSHA256)
	}
	if !strings.Contains(string(b[:200]), "Chart.js v"+web.ChartJSVersion) {
		t.Errorf("vendored Chart.js banner does not name v%s", web.ChartJSVersion)
	}
	lic, err := fs.ReadFile(web.FS(), "vendor/LICENSE.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(lic), "The MIT License") {
		t.Errorf("vendor/LICENSE.md is not Chart.js's MIT license")
	}
}

func TestIndexHTML(t *testing.T) {
	b, err := fs.ReadFile(web.FS(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`<canvas id="budget-chart"`,
		`<canvas id="dtype-chart"`,
		`<script src="vendor/chart.umd.min.js"`,
		`<script src="app.js"`,
		"Chart.js " + web.ChartJSVersion,
		`id="plan-form"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	for _, bad := range []string{"http://", "https://", "<script>"} {
		if strings.Contains(page, bad) {
			t.Errorf("index.html contains %q: the page must work offline with no inline scripts", bad)
		}
	}
}
