package hub_test

import (
	"context"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvcfg/kvcfg/hub"
	"github.com/kvcfg/kvcfg/hub/hubtest"
)

// TestMeasureMillionTensors measures the heap one Resolve of a checkpoint
// whose headers list a million tensors takes: with the default limits
// (refused) and with limits raised past it (read whole, as before the
// limits). Opt-in: KVCFG_HUB_MEASURE=1 (it builds 80 MB of headers).
func TestMeasureMillionTensors(t *testing.T) {
	if os.Getenv("KVCFG_HUB_MEASURE") == "" {
		t.Skip("set KVCFG_HUB_MEASURE=1 to measure")
	}
	cfg, err := os.ReadFile("testdata/qwen3-8b.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := hubtest.New(t, hubtest.ManyTensors("acme/million", commit, cfg, 1_000_000, 8))
	for _, tc := range []struct {
		name string
		mod  func(*hub.Options)
	}{
		{"default limits", func(*hub.Options) {}},
		{"limits raised (as before)", func(o *hub.Options) { o.MaxTensors, o.MaxHeaderBytes = 2_000_000, 100<<20 }},
	} {
		c, _, _ := client(t, srv.URL(), tc.mod)
		peak, base, total := measure(func() {
			m, err := c.Resolve(context.Background(), "acme/million", "")
			t.Logf("%s: error %v", tc.name, err)
			if m != nil {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				t.Logf("%s: model held: heap in use %d MB", tc.name, ms.HeapInuse>>20)
				runtime.KeepAlive(m)
			}
		})
		t.Logf("%s: peak heap %d MB above %d MB before, %d MB allocated", tc.name, (peak-base)>>20, base>>20, total>>20)
	}
}

// measure runs f, sampling the heap in use every 2 ms: the peak, the
// baseline before f and the bytes f allocated.
func measure(f func()) (peak, base, total uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, alloc0 := ms.HeapInuse, ms.TotalAlloc
	var p atomic.Uint64
	p.Store(base)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var s runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			runtime.ReadMemStats(&s)
			if s.HeapInuse > p.Load() {
				p.Store(s.HeapInuse)
			}
		}
	}()
	f()
	close(stop)
	<-done
	runtime.ReadMemStats(&ms)
	return max(p.Load(), ms.HeapInuse), base, ms.TotalAlloc - alloc0
}
