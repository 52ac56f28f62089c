package sglang

import (
	"strings"

	"github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang/sizing"
)

// engineName is the Engine of this package's refusals.
const engineName = "sglang"

// refusal completes r, whose Err carries SGLang's message behind kvcfg's
// sentinels: its Engine, and its Message, the words SGLang prints. Its
// Error() is Err's text and the hint, as before the refusal type was shared.
func refusal(r engine.Refusal) *engine.Refusal {
	r.Engine = engineName
	if r.Err != nil {
		r.Message = engineWords(r.Err.Error())
	}
	return &r
}

// kvcfgPrefixes are the package and sentinel prefixes kvcfg's errors put
// before the engine's own message.
var kvcfgPrefixes = []error{
	ErrNoKVMemory, ErrNotEnoughMemory, ErrPoolTooSmall, ErrContextLength, ErrNoRequests, ErrInvalid, ErrUnified, ErrHostMemory,
	sizing.ErrNoMemory, sizing.ErrSWAFloor, sizing.ErrSWAChunkCap, sizing.ErrMamba, sizing.ErrInvalid,
}

// engineWords strips kvcfg's prefixes from an engine refusal, leaving the
// engine's message as it prints it.
func engineWords(msg string) string {
	for changed := true; changed; {
		changed = false
		for _, p := range kvcfgPrefixes {
			if t, ok := strings.CutPrefix(msg, p.Error()); ok && strings.HasPrefix(t, ": ") {
				msg, changed = t[2:], true
			}
		}
		if t := strings.TrimPrefix(msg, "sglang: "); t != msg {
			msg, changed = t, true
		}
	}
	return msg
}
