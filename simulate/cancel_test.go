package simulate

import (
	"context"
	"errors"
	"io"
	"testing"
)

// burstSource yields n identical requests arriving at t=0 and calls
// onRead after the request numbered at.
type burstSource struct {
	n, read, at int
	onRead      func()
}

func (b *burstSource) Next() (Request, error) {
	if b.read == b.n {
		return Request{}, io.EOF
	}
	b.read++
	if b.read == b.at {
		b.onRead()
	}
	return Request{ArrivalS: 0, PromptTokens: 100, OutputTokens: 10}, nil
}

// TestRunStopsWhileReading: a context canceled while a burst of requests
// arriving at once is being read stops Run within about a thousand more
// requests, not after the whole burst (before the fix every request was
// read, then the first step noticed).
func TestRunStopsWhileReading(t *testing.T) {
	for _, cfg := range []Config{
		{Engine: EngineSGLang, MaxTotalNumTokens: 60000, MaxRunningRequests: 256, ChunkedPrefillSize: 8192},
		{Engine: EngineVLLM, NumGPUBlocks: 60000 / 16, BlockSize: 16, MaxNumBatchedTokens: 8192, MaxNumSeqs: 256},
	} {
		cfg.Time.ConstantStepS = 0.02
		ctx, cancel := context.WithCancel(context.Background())
		src := &burstSource{n: 200_000, at: 2000, onRead: cancel}
		_, err := Run(ctx, cfg, src)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: error = %v, want context.Canceled", cfg.Engine, err)
		}
		if src.read > src.at+1100 {
			t.Errorf("%s: %d requests read after the cancel at %d; want at most about 1024", cfg.Engine, src.read-src.at, src.at)
		}
	}
}
