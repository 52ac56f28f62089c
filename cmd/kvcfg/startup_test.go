package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkProcessStartup runs `kvcfg plan` (the embedded default) and
// `kvcfg version` as processes against a hello-world Go binary built the
// same way in the same run; the ratio metrics are what to compare (target:
// plan ≤ 2× hello world). A second baseline, testdata/floor, is a hello
// world linking the libraries every kvcfg binary links (cobra, net/http,
// encoding/json, the YAML encoder): floor/hello is what those cost before
// any kvcfg code runs, plan/floor what kvcfg adds.
//
//	go test -run '^$' -bench ProcessStartup ./cmd/kvcfg
func BenchmarkProcessStartup(b *testing.B) {
	dir := b.TempDir()
	kvcfg := filepath.Join(dir, "kvcfg")
	if out, err := exec.Command("go", "build", "-o", kvcfg, ".").CombinedOutput(); err != nil {
		b.Fatalf("building kvcfg: %v\n%s", err, out)
	}
	hello := filepath.Join(dir, "hello")
	src := filepath.Join(dir, "hello.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", hello, src).CombinedOutput(); err != nil {
		b.Fatalf("building hello: %v\n%s", err, out)
	}
	floor := filepath.Join(dir, "floor")
	if out, err := exec.Command("go", "build", "-o", floor, "./testdata/floor").CombinedOutput(); err != nil {
		b.Fatalf("building the floor: %v\n%s", err, out)
	}
	// best runs cmd n times and returns the fastest wall time: the floor
	// the machine allows, least disturbed by other load.
	best := func(n int, name string, args ...string) time.Duration {
		var min time.Duration
		for range n {
			start := time.Now()
			if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
				b.Fatalf("%s %v: %v\n%s", name, args, err, out)
			}
			if d := time.Since(start); min == 0 || d < min {
				min = d
			}
		}
		return min
	}
	var h, f, p, v time.Duration
	for b.Loop() {
		h = best(10, hello)
		f = best(10, floor)
		p = best(10, kvcfg, "plan")
		v = best(10, kvcfg, "version")
	}
	b.ReportMetric(float64(h.Microseconds()), "hello-µs")
	b.ReportMetric(float64(p.Microseconds()), "plan-µs")
	b.ReportMetric(float64(p)/float64(h), "plan/hello")
	b.ReportMetric(float64(v)/float64(h), "version/hello")
	b.ReportMetric(float64(f)/float64(h), "floor/hello")
	b.ReportMetric(float64(p)/float64(f), "plan/floor")
}
