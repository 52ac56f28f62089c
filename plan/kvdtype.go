package plan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	kvengine "github.com/kvcfg/kvcfg/engine"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/engine/vllm"
)

// kvSpellings groups the --kv-cache-dtype names that are one storage
// format, kvcfg's canonical name (a dtype.Format) first: SGLang spells FP8
// fp8_e4m3, vLLM takes fp8 and fp8_e4m3, TensorRT-LLM only fp8.
var kvSpellings = [][]string{
	{"fp8_e4m3", "fp8"},
	{"bf16", "bfloat16"},
	{"fp16", "float16"},
}

// kvModelFormats are the formats an engine without a name for them stores
// with "auto" when the model's dtype is that format (TensorRT-LLM has no
// bf16 or fp16 setting, nor older vLLM profiles): such a dtype is planned as
// auto and refused when auto stores the model's cache otherwise.
var kvModelFormats = []string{"bf16", "fp16"}

// spellingGroup is the group of kvSpellings holding name, nil when none does.
func spellingGroup(name string) []string {
	for _, g := range kvSpellings {
		if slices.Contains(g, name) {
			return g
		}
	}
	return nil
}

// engineKVDType is r's engine's name (at r's version) for the KV cache
// dtype dt, given in any engine's spelling: dt itself when the engine takes
// it, else the engine's name for the same storage, else "auto" for a
// model-dtype format (kvModelFormats) the engine has no name for, else dt
// unchanged (the engine lacks it and refuses it). r is normalized.
func engineKVDType(r *Request, dt string) string {
	name := strings.ToLower(strings.TrimSpace(dt))
	g := spellingGroup(name)
	if g == nil {
		return dt
	}
	acc := cachedKVDTypes(r)
	if acc == nil || slices.Contains(acc, name) {
		return dt
	}
	for _, alt := range g {
		if slices.Contains(acc, alt) {
			return alt
		}
	}
	if slices.Contains(kvModelFormats, g[0]) && slices.Contains(acc, "auto") {
		return "auto"
	}
	return dt
}

// CanonicalKVCacheDType is kvcfg's name for the storage the KV cache dtype
// dt names in any engine's spelling (fp8 → fp8_e4m3, bfloat16 → bf16); dt
// trimmed and lowered when no engine spells it otherwise.
func CanonicalKVCacheDType(dt string) string {
	name := strings.ToLower(strings.TrimSpace(dt))
	if g := spellingGroup(name); g != nil {
		return g[0]
	}
	return name
}

// kvDTypeLists caches acceptedKVDTypes by engine and version: the
// normalization of every plan with an explicit KV dtype reads it, and the
// engines return a fresh copy each time; an API client chooses versions,
// so at most 256 are kept.
var kvDTypeLists = kvengine.NewMemo[string, []string](256)

// cachedKVDTypes is acceptedKVDTypes(*r), shared: callers never change it.
func cachedKVDTypes(r *Request) []string {
	v := r.SGLangVersion
	switch r.Engine {
	case EngineVLLM:
		v = r.VLLMVersion
	case EngineTRTLLM:
		v = r.TRTLLMVersion
	}
	key := r.Engine + "\x00" + v
	if l, ok := kvDTypeLists.Load(key); ok {
		return l
	}
	l := acceptedKVDTypes(*r)
	if l != nil {
		kvDTypeLists.Store(key, l)
	}
	return l
}

// dtypeHint says why an engine that refuses the KV dtype dt has no name
// for its storage: for a model-dtype format, that its auto stores the
// model's cache in the model's dtype; "" otherwise (the refusal lists what
// the engine accepts).
func dtypeHint(engine, dt string) string {
	c := CanonicalKVCacheDType(dt)
	if !slices.Contains(kvModelFormats, c) {
		return ""
	}
	return fmt.Sprintf("%s has no setting for a %s KV cache: its auto stores the cache in the model's dtype, %s only for a %s model", EngineLabel(engine), c, c, c)
}

// kvDTypeNote is the report's note when the KV dtype given (another
// engine's spelling) is planned under the engine's own name.
func kvDTypeNote(engine, given, used string) string {
	f, _ := LookupFlag("kv_cache_dtype")
	flag := f.Spelling[engine] // the engine's own, as its flags print
	if flag == "" {
		flag = f.Name
	}
	if strings.HasPrefix(flag, "--") {
		flag += " " + used
	} else {
		flag += "=" + used
	}
	if used == "auto" {
		return fmt.Sprintf("kv_cache_dtype %s: %s has no name for it; its %s stores this %s model's cache as %s, so that is planned", given, EngineLabel(engine), flag, CanonicalKVCacheDType(given), CanonicalKVCacheDType(given))
	}
	return fmt.Sprintf("kv_cache_dtype %s is %s's %s (the same storage): planned and printed so", given, EngineLabel(engine), flag)
}

// EngineKVCacheDType is the name r's engine (at r's version) takes for the
// KV cache dtype dt written in any engine's spelling: dt when the engine
// takes it, its own name for the same storage (fp8_e4m3 → fp8 for
// TensorRT-LLM, fp8 → fp8_e4m3 for SGLang), "auto" for bf16 or fp16 on an
// engine that stores them only as the model's dtype (Run refuses it when
// the model's cache is another format), else dt (the engine refuses it).
func (r Request) EngineKVCacheDType(dt string) string {
	r.KVCacheDType = ""
	r = r.Normalized()
	return engineKVDType(&r, dt)
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
// --kv-cache-dtype value dt, in its own or another engine's spelling
// (EngineKVCacheDType), before any model is planned: a *FieldError listing
// the values the engine accepts when it has no name for that storage.
// Whether the dtype runs on a given GPU and model is the plan's to say.
func (r Request) CheckKVCacheDType(dt string) error {
	r = r.Normalized()
	acc := acceptedKVDTypes(r)
	used := strings.TrimSpace(engineKVDType(&r, dt))
	if acc == nil || slices.ContainsFunc(acc, func(a string) bool { return strings.EqualFold(a, used) }) {
		return nil
	}
	msg := fmt.Sprintf("%s does not accept %q (accepted: %s)", EngineLabel(r.Engine), dt, strings.Join(acc, ", "))
	if h := dtypeHint(r.Engine, dt); h != "" {
		msg += "; " + h
	}
	return &FieldError{Field: "kv_cache_dtype", Err: errors.New(msg)}
}

// withDTypeHint adds to an engine's refusal of the request's KV dtype why
// the engine has no name for it (dtypeHint).
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

// planKVDType plans req, whose KV dtype given (as the caller wrote it) the
// normalization may have put in the engine's spelling: it notes the
// translation in the report, and when a model-dtype format became "auto"
// but auto stores this model's cache otherwise, it plans the given name,
// which the engine refuses.
func planKVDType(ctx context.Context, req *Request, given string, o runOpts) (*Report, error) {
	rep, err := planValid(ctx, req, o)
	used := req.KVCacheDType
	if given == "" || strings.EqualFold(strings.TrimSpace(given), used) || rep == nil {
		return rep, err
	}
	if used == "auto" && rep.ResolvedKVCacheDType != "" && rep.ResolvedKVCacheDType != CanonicalKVCacheDType(given) {
		r := *req
		r.KVCacheDType = given
		return planValid(ctx, &r, o)
	}
	rep.warn(kvDTypeNote(req.Engine, strings.TrimSpace(given), used))
	return rep, err
}
