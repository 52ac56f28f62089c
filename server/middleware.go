package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"
)

// infoKey is the context key of *requestInfo.
type infoKey struct{}

// requestInfo carries what a handler learned about an error back to the
// observing middleware.
type requestInfo struct {
	kind  string
	err   error
	start time.Time // when the handler began: the request deadline counts from it
}

// statusWriter records the status code written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe is the outer middleware: it recovers panics (500, logged with the
// stack), records the request and error metrics by route pattern, and logs
// failed requests.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.metrics.inFlight.Inc()
		defer s.metrics.inFlight.Dec()
		// One allocation for both: the writer that records the status and
		// what the handler learned about an error.
		st := &struct {
			statusWriter
			requestInfo
		}{statusWriter: statusWriter{ResponseWriter: w}}
		info, sw := &st.requestInfo, &st.statusWriter
		info.start = start
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.cfg.Logger.Error("panic serving request", "method", r.Method, "path", clip(r.URL.Path), "panic", clip(fmt.Sprint(p)), "stack", string(debug.Stack()))
				if sw.status == 0 {
					s.writeError(sw, r, &apiError{status: http.StatusInternalServerError, kind: kindPanic, body: ErrorBody{Error: "internal error"}})
				}
				info.kind = kindPanic
			}
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			elapsed := time.Since(start)
			s.metrics.observeRequest(route, r.Method, status, elapsed)
			if status >= 400 {
				kind := info.kind
				if kind == "" {
					kind = kindForStatus(status)
				}
				s.metrics.observeError(route, kind)
				level := slog.LevelInfo
				if status >= 500 {
					level = slog.LevelError
				}
				attrs := []any{"method", r.Method, "path", clip(r.URL.Path), "status", status, "kind", kind, "elapsed", elapsed}
				if info.err != nil {
					attrs = append(attrs, "err", clipMessage(info.err.Error()))
				}
				s.cfg.Logger.Log(r.Context(), level, "request failed", attrs...)
			} else if s.cfg.Logger.Enabled(r.Context(), slog.LevelDebug) { // no argument boxing when off
				s.cfg.Logger.Debug("request", "method", r.Method, "path", clip(r.URL.Path), "status", status, "elapsed", elapsed)
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// kindForStatus names the error kind of a status written without writeError
// (the mux's own 404 and 405, the file server's 404).
func kindForStatus(status int) string {
	switch status {
	case http.StatusNotFound:
		return kindNotFound
	case http.StatusMethodNotAllowed:
		return kindMethodNotAllowed
	case http.StatusRequestEntityTooLarge:
		return kindBodyTooLarge
	case http.StatusForbidden:
		return kindForbidden
	}
	if status >= 500 {
		return kindInternal
	}
	return kindInvalidInput
}

// jsonNotFound answers the requests the mux has no route for (404, or 405
// with its Allow header) with a JSON error body instead of plain text.
func (s *Server) jsonNotFound(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		cw := &captureWriter{header: http.Header{}}
		h.ServeHTTP(cw, r)
		switch cw.status {
		case http.StatusNotFound, http.StatusMethodNotAllowed:
			if allow := cw.header.Get("Allow"); allow != "" {
				w.Header().Set("Allow", allow)
			}
			kind := kindForStatus(cw.status)
			msg := "no such endpoint: " + clip(r.URL.Path)
			if cw.status == http.StatusMethodNotAllowed {
				msg = fmt.Sprintf("method %s not allowed on %s (allowed: %s)", clip(r.Method), clip(r.URL.Path), cw.header.Get("Allow"))
			}
			s.writeError(w, r, &apiError{status: cw.status, kind: kind, body: ErrorBody{Error: msg}})
		default: // a redirect to the cleaned path, say: replay it
			for k, v := range cw.header {
				w.Header()[k] = v
			}
			if cw.status == 0 {
				cw.status = http.StatusOK
			}
			w.WriteHeader(cw.status)
			_, _ = w.Write(cw.body.Bytes())
		}
	})
}

// captureWriter buffers a response so it can be rewritten.
type captureWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (c *captureWriter) Header() http.Header { return c.header }

func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.body.Write(b)
}
