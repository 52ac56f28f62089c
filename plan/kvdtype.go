package plan

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/engine/vllm"
)

// dtypeSynonyms are --kv-cache-dtype names one engine spells differently
// from another for the same storage: name → engine → that engine's name.
var dtypeSynonyms = map[string]map[string]string{
	"fp8":      {EngineSGLang: "fp8_e4m3"},
	"fp8_e4m3": {EngineTRTLLM: "fp8"},
	"bfloat16": {EngineTRTLLM: "auto"},
	"bf16":     {EngineTRTLLM: "auto", EngineVLLM: "bfloat16"},
	"fp16":     {EngineVLLM: "float16", EngineTRTLLM: "auto"},
	"float16":  {EngineTRTLLM: "auto"},
}

// dtypeHint is "did you mean X (ENGINE's name for OTHER's Y)" for a KV
// dtype engine does not take under that name but another engine does, ""
// when there is none.
func dtypeHint(engine, dt string) string {
	name := strings.ToLower(strings.TrimSpace(dt))
	alt := dtypeSynonyms[name][engine]
	if alt == "" {
		return ""
	}
	for _, c := range engineColumns {
		if other := c.Engine; other != engine && slices.Contains(acceptedKVDTypes(Request{Engine: other}), name) {
			return fmt.Sprintf("did you mean %s (%s's name for %s's %s)", alt, EngineLabel(engine), EngineLabel(other), name)
		}
	}
	return fmt.Sprintf("did you mean %s", alt)
}

// acceptedKVDTypes lists the --kv-cache-dtype values r's engine (at r's
// version) accepts; nil for an unknown engine or version.
func acceptedKVDTypes(r Request) []string {
	switch r.Engine {
	case EngineSGLang, "":
		p, _, _ := sglang.ResolveProfile(r.SGLangVersion) // every profile takes the same names
		return sglang.AcceptedKVDTypes(p)
	case EngineVLLM:
		if p, _, err := vllm.ResolveProfile(r.VLLMVersion); err == nil {
			return vllm.AcceptedKVDTypes(p)
		}
	case EngineTRTLLM:
		if p, _, err := trtllm.ResolveProfile(r.TRTLLMVersion); err == nil {
			return trtllm.AcceptedKVDTypes(p)
		}
	}
	return nil
}

// CheckKVCacheDType reports whether r's engine (at r's version) accepts the
// --kv-cache-dtype value dt, before any model is planned: a *FieldError
// listing the accepted values and, when another engine spells the same
// storage so, the name to use ("did you mean fp8_e4m3 (SGLang's name for
// vLLM's fp8)"). Whether the dtype runs on a given GPU and model is the
// plan's to say.
func (r Request) CheckKVCacheDType(dt string) error {
	r = r.Normalized()
	acc := acceptedKVDTypes(r)
	if acc == nil || slices.ContainsFunc(acc, func(a string) bool { return strings.EqualFold(a, strings.TrimSpace(dt)) }) {
		return nil
	}
	msg := fmt.Sprintf("%s does not accept %q (accepted: %s)", EngineLabel(r.Engine), dt, strings.Join(acc, ", "))
	if h := dtypeHint(r.Engine, dt); h != "" {
		msg += "; " + h
	}
	return &FieldError{Field: "kv_cache_dtype", Err: errors.New(msg)}
}

// withDTypeHint adds the cross-engine name to an engine's refusal of the
// request's KV dtype.
func withDTypeHint(req *Request, err error) error {
	fe, ok := errors.AsType[*FieldError](err)
	if !ok || fe.Field != "kv_cache_dtype" {
		return err
	}
	h := dtypeHint(req.Engine, req.KVCacheDType)
	if h == "" {
		return err
	}
	return &FieldError{Field: fe.Field, Err: fmt.Errorf("%w; %s", fe.Err, h)}
}
