package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/hub"
	"github.com/kvcfg/kvcfg/plan"
)

// kindUpstream is the metric kind of a Hub failure (502).
const kindUpstream = "upstream"

// pinModel gives a request the model it names: an inline config as is, a
// catalog entry, or, when the server reads the Hub, a Hub id. The server
// never reads its own disk for a client: no paths, no URLs.
func (s *Server) pinModel(ctx context.Context, req *plan.Request) error {
	if len(req.Config) > 0 || s.cfg.Hub == nil || req.Model == "" {
		if req.Revision != "" && len(req.Config) == 0 {
			return &plan.FieldError{Field: "revision", Err: errors.New("server: revision names a Hub revision: start the server with --hub")}
		}
		return pinCatalog(req)
	}
	id, rev, hasRev := strings.Cut(req.Model, "@")
	if !hasRev {
		rev = req.Revision
	}
	if rev == "" {
		if m, err := catalog.OpenEntry(id); err == nil {
			req.Model, req.Resolved = m.Name, m
			return nil
		}
	}
	if !catalog.ValidHFID(id) {
		return &plan.FieldError{Field: "model", Err: errors.New("server: " + quote(req.Model) + " is neither a catalog name nor a Hugging Face id (org/name)")}
	}
	// The request's own context, with its deadline (Config.RequestTimeout): it ends
	// the read before the write timeout closes the connection. The client
	// shares concurrent reads of one id, keeps models by commit within its
	// memory budget and remembers failures briefly (hub.Options).
	ctx, cancel := s.withDeadline(ctx)
	defer cancel()
	m, err := s.cfg.Hub.Resolve(ctx, id, rev)
	if err != nil {
		return hubError(err)
	}
	req.Model, req.Resolved = m.Name, m
	return nil
}

func quote(s string) string {
	return `"` + strings.ReplaceAll(clip(s), `"`, `\"`) + `"`
}

// hubError maps a Hub failure: the client's bad id, revision or file is
// 400; the Hub failing (gated to the server's token, unreachable, timing
// out, malformed) is 502 with the reason, the Hub or the request running
// out of time 504.
func hubError(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, hub.ErrTimeout):
		return &apiError{status: http.StatusGatewayTimeout, kind: kindUpstream, body: ErrorBody{Error: err.Error(), Field: "model"}}
	case errors.Is(err, hub.ErrBadID), errors.Is(err, hub.ErrNotFound), errors.Is(err, catalog.ErrUnknownModel) && !errors.Is(err, hub.ErrOffline):
		return &plan.FieldError{Field: "model", Err: err}
	}
	return &apiError{status: http.StatusBadGateway, kind: kindUpstream, body: ErrorBody{Error: err.Error(), Field: "model"}}
}
