package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/hub"
	"github.com/kvcfg/kvcfg/plan"
)

// kindUpstream is the metric kind of a Hub failure (502).
const kindUpstream = "upstream"

// DefaultHubConcurrency bounds the Hub reads in flight when
// Config.HubConcurrency is 0.
const DefaultHubConcurrency = 4

// hubCacheSize bounds the Hub models kept in memory (a DeepSeek-V3-sized
// checkpoint's headers take about 10 MB).
const hubCacheSize = 64

// hubModels resolves Hub ids for the API: only ids matching the Hub's
// repo-id grammar, at most Concurrency at once, each (id, revision) once
// while it is cached (failures are not cached; concurrent requests for
// one id share one read).
type hubModels struct {
	resolver catalog.Resolver
	sem      chan struct{}

	mu       sync.Mutex
	done     map[string]*catalog.Model
	inflight map[string]*hubCall
}

type hubCall struct {
	wait chan struct{}
	m    *catalog.Model
	err  error
}

func newHubModels(r catalog.Resolver, concurrency int) *hubModels {
	if concurrency <= 0 {
		concurrency = DefaultHubConcurrency
	}
	return &hubModels{resolver: r, sem: make(chan struct{}, concurrency),
		done: map[string]*catalog.Model{}, inflight: map[string]*hubCall{}}
}

func (h *hubModels) resolve(ctx context.Context, id, rev string) (*catalog.Model, error) {
	key := id + "@" + rev
	h.mu.Lock()
	if m, ok := h.done[key]; ok {
		h.mu.Unlock()
		return m, nil
	}
	c, ok := h.inflight[key]
	if !ok {
		c = &hubCall{wait: make(chan struct{})}
		h.inflight[key] = c
		go h.run(key, id, rev, c)
	}
	h.mu.Unlock()
	select {
	case <-c.wait:
		return c.m, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run reads one model with a context of its own: a client hanging up does
// not cancel a read that others may be waiting for (the resolver's own
// deadline bounds it).
func (h *hubModels) run(key, id, rev string, c *hubCall) {
	h.sem <- struct{}{}
	c.m, c.err = h.resolver.Resolve(context.Background(), id, rev)
	<-h.sem
	h.mu.Lock()
	delete(h.inflight, key)
	if c.err == nil {
		if len(h.done) >= hubCacheSize {
			for k := range h.done { // drop one at random
				delete(h.done, k)
				break
			}
		}
		h.done[key] = c.m
	}
	h.mu.Unlock()
	close(c.wait)
}

// pinModel gives a request the model it names: an inline config as is, a
// catalog entry, or, when the server reads the Hub, a Hub id. The server
// never reads its own disk for a client: no paths, no URLs.
func (s *Server) pinModel(ctx context.Context, req *plan.Request) error {
	if len(req.Config) > 0 || s.hub == nil || req.Model == "" {
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
	m, err := s.hub.resolve(ctx, id, rev)
	if err != nil {
		return hubError(err)
	}
	req.Model, req.Resolved = m.Name, m
	return nil
}

func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

// hubError maps a Hub failure: the client's bad id, revision or file is
// 400; the Hub failing (gated to the server's token, unreachable, timing
// out, malformed) is 502 with the reason.
func hubError(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, hub.ErrBadID), errors.Is(err, hub.ErrNotFound), errors.Is(err, catalog.ErrUnknownModel) && !errors.Is(err, hub.ErrOffline):
		return &plan.FieldError{Field: "model", Err: err}
	}
	return &apiError{status: http.StatusBadGateway, kind: kindUpstream, body: ErrorBody{Error: err.Error(), Field: "model"}}
}
