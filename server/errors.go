package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine/sglang"
	"github.com/kvcfg/kvcfg/fit"
	"github.com/kvcfg/kvcfg/gpu"
	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

// Error kinds: the "kind" label of kvcfg_http_errors_total.
const (
	kindInvalidInput     = "invalid_input"
	kindMalformedBody    = "malformed_body"
	kindInfeasible       = "infeasible"
	kindBodyTooLarge     = "body_too_large"
	kindNotFound         = "not_found"
	kindMethodNotAllowed = "method_not_allowed"
	kindForbidden        = "forbidden"
	kindCanceled         = "canceled"
	kindInternal         = "internal"
	kindPanic            = "panic"
)

// ErrorBody is the JSON body of every API error response.
type ErrorBody struct {
	// Error is the human message, worded as the CLI words it.
	Error string `json:"error"`
	// Field is the request field at fault (snake_case, as in the request),
	// when one is.
	Field string `json:"field,omitempty"`
	// Report is what the CLI prints on stdout next to the same error: the
	// partial plan of an infeasible request (its budget shows why it does
	// not fit, its fix_* fields what to change) or the failed comparison.
	Report any `json:"report,omitempty"`
}

// apiError is an error with its HTTP status, metric kind and body.
type apiError struct {
	status     int
	kind       string
	body       ErrorBody
	retryAfter int // seconds; 0: no Retry-After header
}

func (e *apiError) Error() string { return e.body.Error }

// badRequest returns a 400 of the given kind.
func badRequest(kind, field, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, kind: kind, body: ErrorBody{Error: fmt.Sprintf(format, args...), Field: field}}
}

// classify maps any error of decoding or planning to its status, kind and
// body. It is the one place where errors become status codes: input
// problems are 400, a well-formed request the engine would refuse or that
// misses its target (an infeasible plan) 422 with the partial report, an
// oversized body 413; only unknown errors are 500.
func classify(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &apiError{status: http.StatusRequestEntityTooLarge, kind: kindBodyTooLarge,
			body: ErrorBody{Error: fmt.Sprintf("request body larger than %d bytes", mbe.Limit)}}
	}
	var fe *plan.FieldError
	if errors.As(err, &fe) {
		if errors.Is(err, plan.ErrInfeasible) {
			return &apiError{status: http.StatusUnprocessableEntity, kind: kindInfeasible, body: ErrorBody{Error: err.Error(), Field: fe.Field}}
		}
		return &apiError{status: http.StatusBadRequest, kind: kindInvalidInput, body: ErrorBody{Error: err.Error(), Field: fe.Field}}
	}
	switch {
	case errors.Is(err, fit.ErrInvalid):
		return &apiError{status: http.StatusBadRequest, kind: kindInvalidInput, body: ErrorBody{Error: err.Error()}}
	case errors.Is(err, plan.ErrInfeasible):
		ae := &apiError{status: http.StatusUnprocessableEntity, kind: kindInfeasible, body: ErrorBody{Error: err.Error()}}
		var fh *fieldHint
		if errors.As(err, &fh) {
			ae.body.Field = fh.field
		}
		return ae
	case errors.Is(err, catalog.ErrUnknownModel):
		return &apiError{status: http.StatusBadRequest, kind: kindInvalidInput, body: ErrorBody{Error: err.Error(), Field: "model"}}
	case errors.Is(err, gpu.ErrUnknown):
		return &apiError{status: http.StatusBadRequest, kind: kindInvalidInput, body: ErrorBody{Error: err.Error(), Field: "gpu"}}
	case errors.Is(err, sglang.ErrUnsupportedKV), errors.Is(err, sglang.ErrDeprecatedKV), errors.Is(err, sglang.ErrUnavailableKV):
		return &apiError{status: http.StatusBadRequest, kind: kindInvalidInput, body: ErrorBody{Error: err.Error(), Field: "kv_cache_dtype"}}
	case errors.Is(err, units.ErrSyntax), errors.Is(err, sglang.ErrInvalidRequest), errors.Is(err, dtype.ErrUnknown):
		return &apiError{status: http.StatusBadRequest, kind: kindInvalidInput, body: ErrorBody{Error: err.Error()}}
	case errors.Is(err, context.DeadlineExceeded):
		return timeoutError(err)
	case errors.Is(err, context.Canceled):
		return &apiError{status: http.StatusServiceUnavailable, kind: kindCanceled, body: ErrorBody{Error: "request canceled: " + err.Error()}}
	}
	return &apiError{status: http.StatusInternalServerError, kind: kindInternal, body: ErrorBody{Error: "internal error: " + err.Error()}}
}

// fieldHint names the request field that fixes an infeasible plan (from the
// report's fix_flag), so the page can point at it.
type fieldHint struct {
	field string
	err   error
}

func (e *fieldHint) Error() string { return e.err.Error() }
func (e *fieldHint) Unwrap() error { return e.err }
