// Command kvcfg-loadgen measures the HTTP API under load: it sends the same
// number of concurrent clients first to GET /healthz (the server's floor)
// and then to POST /api/v1/plan, on the same server in the same run, and
// prints requests per second, the plan/healthz ratio, latency percentiles
// and errors. Without -url it starts kvcfg's server in-process on a
// loopback port, so the figures include the server's own CPU time; the
// process's CPU time per request (client and server, where the OS reports
// it) gives the ratio a machine with nothing else to run would show.
//
//	go run ./cmd/kvcfg-loadgen                  # c=64, 5 s per phase
//	go run ./cmd/kvcfg-loadgen -c 64 -d 10s -body '{"model":"Qwen/Qwen3-8B"}'
//	go run ./cmd/kvcfg-loadgen -url http://127.0.0.1:8080
//	go run ./cmd/kvcfg-loadgen -d 8s -rounds 8    # the phases in alternating 1 s slices (a shared machine)
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvcfg/kvcfg/internal/cputime"
	"github.com/kvcfg/kvcfg/server"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kvcfg-loadgen:", err)
		os.Exit(1)
	}
}

// phase is one endpoint's measurement.
type phase struct {
	name      string
	requests  int64
	errors    int64
	seconds   float64
	cpu       time.Duration // the process's CPU time (client and in-process server), 0 where unknown
	latencies []time.Duration
}

// add counts q, a slice of the same endpoint's load, in p (latencies
// unsorted).
func (p *phase) add(q phase) {
	p.name = q.name
	p.requests += q.requests
	p.errors += q.errors
	p.seconds += q.seconds
	p.cpu += q.cpu
	p.latencies = append(p.latencies, q.latencies...)
}

// cpuPerRequest is the process's CPU time per request ("-" where unknown).
func (p phase) cpuPerRequest() string {
	if p.cpu <= 0 || p.requests == 0 {
		return "-"
	}
	return (p.cpu / time.Duration(p.requests)).Round(100 * time.Nanosecond).String()
}

// cpuRatio words healthz's CPU time per request over plan's: the ratio of
// req/s on a machine with nothing else to run, and much steadier than it
// on a shared one. "" where the CPU time is unknown.
func cpuRatio(health, plans phase) string {
	if health.cpu <= 0 || plans.cpu <= 0 || health.requests == 0 || plans.requests == 0 {
		return ""
	}
	h := health.cpu.Seconds() / float64(health.requests)
	p := plans.cpu.Seconds() / float64(plans.requests)
	return fmt.Sprintf("; by CPU per request: %.2f", h/p)
}

func (p phase) rate() float64 { return float64(p.requests) / p.seconds }

func (p phase) pct(q float64) time.Duration {
	if len(p.latencies) == 0 {
		return 0
	}
	return p.latencies[min(int(q*float64(len(p.latencies))), len(p.latencies)-1)]
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("kvcfg-loadgen", flag.ContinueOnError)
	url := fs.String("url", "", "server base URL (default: start kvcfg's server in-process on loopback)")
	conc := fs.Int("c", 64, "concurrent clients")
	dur := fs.Duration("d", 5*time.Second, "duration of each phase")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (client and in-process server) to this file")
	rounds := fs.Int("rounds", 1, "split each phase into this many slices, run alternately (healthz, plan, healthz, ...): on a shared machine the two phases then see the same load")
	body := fs.String("body", `{"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "kv_cache_dtype": "fp8_e4m3"}`, "plan request body")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *conc < 1 || *dur <= 0 || *rounds < 1 {
		return errors.New("-c and -rounds must be at least 1 and -d positive")
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	base := *url
	if base == "" {
		server.ApplyGCDefault() // the GC setting kvcfg serve runs with
		srv, err := server.New(server.Config{})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		hs := &http.Server{Handler: srv.Handler()}
		go func() { _ = hs.Serve(ln) }()
		defer hs.Close()
		base = "http://" + ln.Addr().String()
	}
	tr := &http.Transport{MaxIdleConns: *conc, MaxIdleConnsPerHost: *conc, MaxConnsPerHost: *conc}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	// Warm up both endpoints (connections, caches).
	for _, p := range []struct{ method, path, body string }{{"GET", "/healthz", ""}, {"POST", "/api/v1/plan", *body}} {
		if _, err := do(client, p.method, base+p.path, p.body); err != nil {
			return fmt.Errorf("%s %s: %w", p.method, p.path, err)
		}
	}
	var health, plans phase
	for range *rounds {
		health.add(load(client, "GET", base+"/healthz", "", *conc, *dur/time.Duration(*rounds)))
		plans.add(load(client, "POST", base+"/api/v1/plan", *body, *conc, *dur/time.Duration(*rounds)))
	}
	slices.Sort(health.latencies)
	slices.Sort(plans.latencies)

	fmt.Fprintf(out, "%-22s %10s %8s %10s %10s %10s %10s\n", "endpoint", "req/s", "errors", "p50", "p99", "max", "cpu/req")
	for _, p := range []phase{health, plans} {
		fmt.Fprintf(out, "%-22s %10.0f %8d %10s %10s %10s %10s\n", p.name, p.rate(), p.errors,
			p.pct(0.50).Round(time.Microsecond), p.pct(0.99).Round(time.Microsecond), p.pct(1).Round(time.Microsecond), p.cpuPerRequest())
	}
	inRounds := ""
	if *rounds > 1 {
		inRounds = fmt.Sprintf(" in %d alternating rounds", *rounds)
	}
	fmt.Fprintf(out, "plan / healthz: %.2f (c=%d, %s per phase%s)%s\n", plans.rate()/health.rate(), *conc, *dur, inRounds, cpuRatio(health, plans))
	if health.errors+plans.errors > 0 {
		return fmt.Errorf("%d requests failed", health.errors+plans.errors)
	}
	return nil
}

// load runs conc clients against one endpoint for d.
func load(client *http.Client, method, url, body string, conc int, d time.Duration) phase {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var n, errs atomic.Int64
	lat := make([][]time.Duration, conc)
	var wg sync.WaitGroup
	cpu0 := cputime.Process()
	start := time.Now()
	for i := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t := time.Now()
				if _, err := do(client, method, url, body); err != nil {
					errs.Add(1)
					continue
				}
				lat[i] = append(lat[i], time.Since(t))
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	p := phase{name: method + " " + url[len(url)-len(pathOf(url)):], requests: n.Load(), errors: errs.Load(), seconds: time.Since(start).Seconds(), cpu: cputime.Process() - cpu0}
	for _, l := range lat {
		p.latencies = append(p.latencies, l...)
	}
	slices.Sort(p.latencies)
	return p
}

func pathOf(url string) string {
	for i := len("http://"); i < len(url); i++ {
		if url[i] == '/' {
			return url[i:]
		}
	}
	return "/"
}

func do(client *http.Client, method, url, body string) (int, error) {
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("status %d", resp.StatusCode)
	}
	return resp.StatusCode, nil
}
