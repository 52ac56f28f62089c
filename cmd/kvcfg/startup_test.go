package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkProcessStartup runs `kvcfg plan` (the embedded default) and
// `kvcfg version` as processes against a hello-world Go binary built the
// same way in the same run; the ratio metrics are what to compare between
// commits and machines. A second baseline, testdata/floor, is a hello
// world linking the libraries every kvcfg process links (cobra, net/http,
// encoding/json, the YAML encoder): floor/hello is what those cost before
// any kvcfg code runs, plan/floor what kvcfg adds.
//
//	go test -run '^$' -bench ProcessStartup ./cmd/kvcfg
func BenchmarkProcessStartup(b *testing.B) {
	kvcfg, hello, floor := startupBinaries(b)
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

// startupBinaries builds kvcfg, a hello world and testdata/floor into a
// temporary directory, or takes them from $KVCFG_STARTUP_BINS (a machine
// without a Go toolchain: scripts/perf-bundle.sh builds them).
func startupBinaries(b *testing.B) (kvcfg, hello, floor string) {
	if dir := os.Getenv("KVCFG_STARTUP_BINS"); dir != "" {
		kvcfg, hello, floor = filepath.Join(dir, "kvcfg"), filepath.Join(dir, "hello"), filepath.Join(dir, "floor")
		for _, p := range []string{kvcfg, hello, floor} {
			if _, err := os.Stat(p); err != nil {
				b.Fatalf("KVCFG_STARTUP_BINS: %v", err)
			}
		}
		return kvcfg, hello, floor
	}
	dir := b.TempDir()
	kvcfg = filepath.Join(dir, "kvcfg")
	if out, err := exec.Command("go", "build", "-o", kvcfg, ".").CombinedOutput(); err != nil {
		b.Fatalf("building kvcfg: %v\n%s", err, out)
	}
	hello = filepath.Join(dir, "hello")
	if out, err := exec.Command("go", "build", "-o", hello, "./testdata/hello").CombinedOutput(); err != nil {
		b.Fatalf("building hello: %v\n%s", err, out)
	}
	floor = filepath.Join(dir, "floor")
	if out, err := exec.Command("go", "build", "-o", floor, "./testdata/floor").CombinedOutput(); err != nil {
		b.Fatalf("building the floor: %v\n%s", err, out)
	}
	return kvcfg, hello, floor
}

// TestPerfScripts checks the shell syntax of scripts/perf-bundle.sh and
// scripts/perf/run.sh and that both refuse a section they do not know
// (exit 2) before building or running anything.
func TestPerfScripts(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	bundle, runner := filepath.Join("..", "..", "scripts", "perf-bundle.sh"), filepath.Join("..", "..", "scripts", "perf", "run.sh")
	for _, p := range []string{bundle, runner} {
		if out, err := exec.Command(sh, "-n", p).CombinedOutput(); err != nil {
			t.Errorf("sh -n %s: %v\n%s", p, err, out)
		}
	}
	dir := t.TempDir()
	for _, args := range [][]string{{bundle, dir, "nosuch"}, {runner, "nosuch"}} {
		cmd := exec.Command(sh, args...)
		cmd.Env = append(os.Environ(), "OUT="+filepath.Join(dir, "results"))
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%v: %v, want exit 2\n%s", args, err, out)
		}
	}
}
