package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/engine/trtllm"
	"github.com/kvcfg/kvcfg/engine/vllm"
	"github.com/kvcfg/kvcfg/fit"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/server/web"
)

// contentSecurityPolicy lets the page load only its own files: no inline
// scripts, no CDN, no third-party connections.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// routes builds the mux and wraps it in the middleware.
func (s *Server) routes() http.Handler {
	// Browsers send Sec-Fetch-Site: the API refuses cross-origin POSTs so
	// that no other site can drive it from a visitor's browser.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, &apiError{status: http.StatusForbidden, kind: kindForbidden,
			body: ErrorBody{Error: "cross-origin request refused"}})
	}))

	mux := http.NewServeMux()
	mux.Handle("POST /api/v1/plan", cop.Handler(jsonEndpoint(s, "plan", s.plan)))
	mux.Handle("POST /api/v1/compare", cop.Handler(jsonEndpoint(s, "compare", s.compare)))
	mux.Handle("POST /api/v1/fit", cop.Handler(jsonEndpoint(s, "fit", heavy(s, s.fit))))
	mux.Handle("POST /api/v1/explain", cop.Handler(jsonEndpoint(s, "explain", s.explain)))
	mux.Handle("POST /api/v1/simulate", cop.Handler(jsonEndpoint(s, "simulate", heavy(s, s.simulate))))
	mux.HandleFunc("GET /api/v1/models", s.handleModels)
	mux.HandleFunc("GET /api/v1/models/{name...}", s.handleModel)
	mux.HandleFunc("GET /api/v1/gpus", s.handleGPUs)
	mux.HandleFunc("GET /api/v1/dtypes", s.handleDTypes)
	mux.HandleFunc("GET /api/v1/flags", s.handleFlags)
	mux.HandleFunc("GET /healthz", s.handleHealth)
	mux.Handle("GET /metrics", s.metrics.handler)
	mux.Handle("GET /", s.page(mux))
	return s.observe(s.jsonNotFound(mux))
}

// jsonEndpoint decodes a JSON Req strictly, calls fn and writes its result
// with the CLI's JSON encoding (two-space indent), or the classified error.
// name is the endpoint label of kvcfg_plans_total.
func jsonEndpoint[Req any, Resp any](s *Server, name string, fn func(context.Context, Req) (Resp, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req Req
		zeros, err := decodeBody(w, r, s.cfg.MaxBodyBytes, &req)
		if err == nil {
			err = givenZeros(zeros, &req)
		}
		if err != nil {
			s.metrics.observePlan(name, classify(err).kind)
			s.writeError(w, r, err)
			return
		}
		resp, err := fn(r.Context(), req)
		if err != nil {
			ae := classify(err)
			outcome := ae.kind
			if ae.status >= 500 {
				outcome = "error"
			}
			if (ae.status == http.StatusBadRequest || ae.status == http.StatusUnprocessableEntity) && present(resp) {
				withReport := *ae
				withReport.body.Report = resp
				ae = &withReport
			}
			s.metrics.observePlan(name, outcome)
			s.writeError(w, r, ae)
			return
		}
		s.metrics.observePlan(name, "ok")
		s.writeJSON(w, http.StatusOK, resp)
	})
}

// givenZeros refuses a plan or compare body that gives 0 where 0 means
// nothing ({"tp_size": 0}), with every other problem of the request; fit's
// and explain's bodies are checked in their plan request ("base", "plan").
// zeros are what decodeStrict found.
func givenZeros(zeros []zeroKey, req any) error {
	var r plan.Request
	switch v := req.(type) {
	case *plan.Request:
		r = *v
	case *plan.CompareRequest:
		r = v.Request
		r.Engine = "" // a list there; each column checks its engine
	case *fit.Options:
		return plan.ZeroErrors(zerosIn(zeros, "base"))
	case *ExplainRequest:
		return plan.ZeroErrors(zerosIn(zeros, "plan"))
	default:
		return nil
	}
	zerr := plan.ZeroErrors(zerosIn(zeros, ""))
	if zerr == nil {
		return nil
	}
	if _, ok := req.(*plan.Request); ok {
		if err := r.Validate(); err != nil {
			return errors.Join(zerr, err)
		}
	}
	return zerr
}

// pinCatalog makes a request without an inline config plan exactly the
// catalog entry it names (catalog.Default when none): it fails for names
// outside the catalog and hands the planner the entry, parsed once per
// process, under its canonical name. The CLI also reads config.json paths, model directories and the
// local HF cache; a server must not read its own disk for a client.
func pinCatalog(req *plan.Request) error {
	if len(req.Config) > 0 {
		return nil
	}
	if req.Model == "" {
		req.Model = catalog.Default
	}
	m, err := catalog.OpenEntry(req.Model)
	if err != nil {
		return &plan.FieldError{Field: "model", Err: err}
	}
	req.Model, req.Resolved = m.Name, m
	return nil
}

// compare runs the configured comparison on a catalog model.
func (s *Server) compare(ctx context.Context, req plan.CompareRequest) (*plan.Comparison, error) {
	if err := s.pinModel(ctx, &req.Request); err != nil {
		return nil, err
	}
	return s.cfg.Compare(ctx, req)
}

// plan runs the configured planner on a catalog model.
func (s *Server) plan(ctx context.Context, req plan.Request) (*plan.Report, error) {
	if err := s.pinModel(ctx, &req); err != nil {
		return nil, err
	}
	rep, err := s.cfg.Plan(ctx, req)
	if err != nil && errors.Is(err, plan.ErrInfeasible) && rep != nil && rep.FixFlag != "" {
		// Worded as `kvcfg plan` words it (plan.WithFix).
		err = plan.WithFix(err, rep)
		field := plan.KeyOfFlag(rep.FixFlag) // the request key of any engine's spelling
		if field == "" {
			field = strings.ReplaceAll(strings.TrimPrefix(rep.FixFlag, "--"), "-", "_")
		}
		err = &fieldHint{field: field, err: err}
	}
	return rep, err
}

// present reports whether v holds a value: not nil, not a nil pointer.
func present(v any) bool {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return false
	}
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
		return !rv.IsNil()
	}
	return true
}

// writeJSON writes v as the CLI's `-o json` does: two-space indent and a
// final newline.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	bp := bufPool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 1<<20 { // keep the pool's buffers small
			bufPool.Put(bp)
		}
	}()
	var out []byte
	if a, ok := v.(jsonAppender); ok {
		// A report writes itself in one pass, already indented.
		b, err := a.AppendJSON((*bp)[:0], "  ")
		if err != nil {
			s.writeError(w, nil, err)
			return
		}
		out = append(b, '\n')
	} else {
		buf := bytes.NewBuffer((*bp)[:0])
		enc := json.NewEncoder(buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			s.writeError(w, nil, err)
			return
		}
		out = buf.Bytes()
	}
	*bp = out
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Cache-Control"] = noStore
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// jsonAppender is a value that appends its own JSON (plan.Report).
type jsonAppender interface {
	AppendJSON(dst []byte, indent string) ([]byte, error)
}

// bufPool holds response buffers between requests.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// Header values shared by every JSON response (never modified).
var (
	jsonContentType = []string{"application/json; charset=utf-8"}
	noStore         = []string{"no-store"}
	noSniff         = []string{"nosniff"}
)

// writeError classifies err and writes its JSON body; the middleware reads
// the kind back for the error metric and the log.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := classify(err)
	if r != nil {
		if info, ok := r.Context().Value(infoKey{}).(*requestInfo); ok {
			info.kind = ae.kind
			info.err = err
		}
	}
	body := ae.body
	body.Error, body.Field = clipMessage(body.Error), clip(body.Field)
	b, _ := json.Marshal(body)
	h := w.Header()
	if ae.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(ae.retryAfter))
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(ae.status)
	_, _ = w.Write(append(b, '\n'))
}

// ModelSummary is one entry of GET /api/v1/models.
type ModelSummary struct {
	// Name is the catalog name to send as "model".
	Name string `json:"name"`
	// Source is the model's own name (its HF id).
	Source        string `json:"source,omitempty"`
	Architecture  string `json:"architecture,omitempty"`
	ModelType     string `json:"model_type,omitempty"`
	NumLayers     int    `json:"num_layers,omitempty"`
	NumKVHeads    int    `json:"num_kv_heads,omitempty"`
	HeadDim       int    `json:"head_dim,omitempty"`
	Attention     string `json:"attention_kind,omitempty"`
	ContextLength int    `json:"context_length,omitempty"`
	ParamsTotal   int64  `json:"params_total,omitempty"`
	// Error is set when the catalog entry fails to load.
	Error string `json:"error,omitempty"`
}

// ModelList is the body of GET /api/v1/models.
type ModelList struct {
	// Default is the model a plan uses when the request names none.
	Default string `json:"default"`
	// Models are the catalog entries, sorted by name.
	Models []ModelSummary `json:"models"`
	// Hub is true when the server also plans Hugging Face ids outside
	// the catalog (`kvcfg serve --hub`).
	Hub bool `json:"hub,omitempty"`
}

// modelList is built once: the catalog is embedded and never changes.
var modelList = sync.OnceValue(func() []ModelSummary {
	names := catalog.Names()
	out := make([]ModelSummary, 0, len(names))
	for _, n := range names {
		m := ModelSummary{Name: n}
		spec, err := catalog.Load(n)
		if err != nil {
			m.Error = err.Error()
		} else if spec != nil {
			if spec.Name != n {
				m.Source = spec.Name
			}
			m.Architecture = spec.Architecture
			m.ModelType = spec.ModelType
			m.NumLayers = spec.NumLayers
			m.NumKVHeads = spec.NumKVHeads
			m.HeadDim = spec.HeadDim
			m.Attention = spec.AttentionLabel()
			m.ContextLength = spec.ContextLength
			m.ParamsTotal = spec.Params.Total
		}
		out = append(out, m)
	}
	return out
})

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, ModelList{Default: catalog.Default, Models: modelList(), Hub: s.cfg.Hub != nil})
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	spec, err := catalog.Load(name)
	if err != nil && s.cfg.Hub != nil {
		req := plan.Request{Model: name}
		if err = s.pinModel(r.Context(), &req); err == nil {
			spec = req.Resolved.Spec
		} else if ae := classify(err); ae.status != http.StatusBadRequest {
			s.writeError(w, r, ae)
			return
		}
	}
	if err != nil {
		s.writeError(w, r, &apiError{status: http.StatusNotFound, kind: kindNotFound, body: ErrorBody{Error: err.Error(), Field: "model"}})
		return
	}
	s.writeJSON(w, http.StatusOK, spec)
}

func (s *Server) handleGPUs(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, map[string]any{"gpus": gpu.All()})
}

// FormatInfo is a KV storage format as GET /api/v1/dtypes lists it.
type FormatInfo struct {
	dtype.Format
	// BytesPerElement is the average storage per element, scales included.
	BytesPerElement float64 `json:"bytes_per_element"`
}

// DTypes is the body of GET /api/v1/dtypes.
type DTypes struct {
	// KVCacheDTypes are the kv_cache_dtype values SGLang (the default
	// engine) accepts, in its order.
	KVCacheDTypes []string `json:"kv_cache_dtypes"`
	// Engines lists the accepted kv_cache_dtype values per engine (vLLM's
	// are those of its newest profile).
	Engines map[string][]string `json:"engines"`
	// Formats are the storage formats behind them, by canonical name.
	Formats []FormatInfo `json:"formats"`
}

func (s *Server) handleDTypes(w http.ResponseWriter, r *http.Request) {
	out := DTypes{
		KVCacheDTypes: sglang.AcceptedKVDTypes(sglang.Profile{}),
		Engines: map[string][]string{
			plan.EngineSGLang: sglang.AcceptedKVDTypes(sglang.Profile{}),
			plan.EngineVLLM:   vllm.AcceptedKVDTypes(vllm.Latest),
			plan.EngineTRTLLM: trtllm.KVCacheDTypes(),
		},
	}
	for _, n := range dtype.FormatNames() {
		f, err := dtype.LookupFormat(n)
		if err != nil {
			continue
		}
		out.Formats = append(out.Formats, FormatInfo{Format: f, BytesPerElement: f.BytesPerElement()})
	}
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// page serves the embedded web page. GET and HEAD of /api/ paths land here
// too ("GET /" matches every path): they get a JSON 405 when the path has a
// route for another method, else a JSON 404. Any other path the page does
// not have is a 404 in the same JSON shape, except for a client that
// accepts text/html (a browser), which gets a short HTML page linking the
// form (docs/serve.md, "Errors").
func (s *Server) page(mux *http.ServeMux) http.Handler {
	fsys := web.FS()
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") {
			var allow []string
			for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
				probe := r.Clone(r.Context())
				probe.Method = m
				if _, p := mux.Handler(probe); p != "" && p != "GET /" {
					allow = append(allow, m)
				}
			}
			if len(allow) > 0 {
				w.Header().Set("Allow", strings.Join(allow, ", "))
				s.writeError(w, r, &apiError{status: http.StatusMethodNotAllowed, kind: kindMethodNotAllowed,
					body: ErrorBody{Error: fmt.Sprintf("method %s not allowed on %s (allowed: %s)", clip(r.Method), clip(r.URL.Path), strings.Join(allow, ", "))}})
				return
			}
			s.writeError(w, r, &apiError{status: http.StatusNotFound, kind: kindNotFound,
				body: ErrorBody{Error: "no such endpoint: " + clip(r.URL.Path)}})
			return
		}
		if name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/"); name != "" {
			if _, err := fs.Stat(fsys, name); err != nil {
				pageNotFound(s, w, r)
				return
			}
		}
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// pageNotFound answers a path the page does not have: an HTML page for a
// browser (Accept names text/html), else the API's JSON 404.
func pageNotFound(s *Server, w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Accept"), "text/html") {
		s.writeError(w, r, &apiError{status: http.StatusNotFound, kind: kindNotFound,
			body: ErrorBody{Error: "no such page: " + r.URL.Path + " (the form is at /, the API under /api/v1/)"}})
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusNotFound)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(notFoundHTML))
	}
}

// notFoundHTML is the 404 page a browser gets.
const notFoundHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kvcfg: not found</title></head>
<body><h1>Not found</h1><p>kvcfg has no page here. <a href="/">Plan a KV cache</a>, or see the API under /api/v1/.</p></body></html>
`

// Ensure the planner matches what jsonEndpoint needs.
var _ func(context.Context, plan.Request) (*plan.Report, error) = plan.Run
