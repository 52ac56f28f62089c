package server

import (
	"context"

	"github.com/kvcfg/kvcfg/explain"
	"github.com/kvcfg/kvcfg/fit"
	"github.com/kvcfg/kvcfg/plan"
)

// fit runs `kvcfg fit` on a catalog model (or a Hub id with --hub): POST /api/v1/fit takes
// fit.Options (base is a plan request; a workload target as the generator
// `workload` or the requests inline as `trace`, bounded as POST
// /api/v1/simulate bounds them) and answers fit.Result, the JSON of
// `kvcfg fit -o json`.
func (s *Server) fit(ctx context.Context, o fit.Options) (*fit.Result, error) {
	if err := s.checkRequests(o.Workload, o.Trace); err != nil {
		return nil, err
	}
	if err := s.pinModel(ctx, &o.Base); err != nil {
		return nil, err
	}
	return s.cfg.Fit(ctx, o)
}

// ExplainRequest is the body of POST /api/v1/explain.
type ExplainRequest struct {
	// Message is the engine's error or log text (a whole log may be sent:
	// the first known message wins, and its memory readings are used).
	Message string `json:"message"`
	// Plan, when given, is the launch the message came from (the keys of
	// POST /api/v1/plan): kvcfg plans it and searches the knob's value.
	Plan *plan.Request `json:"plan,omitempty"`
}

// ExplainResponse is the answer of POST /api/v1/explain: the JSON of
// `kvcfg explain -o json`.
type ExplainResponse struct {
	*explain.Explanation
	// Advice is set when the request named the launch (plan).
	Advice *explain.Advice `json:"plan_advice,omitempty"`
}

func (s *Server) explain(ctx context.Context, req ExplainRequest) (*ExplainResponse, error) {
	e, err := explain.Explain(req.Message)
	if err != nil {
		return nil, badRequest(kindInvalidInput, "message", "%v", err)
	}
	res := &ExplainResponse{Explanation: e}
	if req.Plan != nil {
		p := *req.Plan
		if err := s.pinModel(ctx, &p); err != nil {
			return nil, err
		}
		if res.Advice, err = explain.Advise(ctx, e, p); err != nil {
			return nil, err
		}
	}
	return res, nil
}
