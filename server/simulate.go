package server

import (
	"context"
	"errors"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/simulate"
)

// maxSimRequests bounds the requests one POST /api/v1/simulate replays.
const maxSimRequests = 200_000

// SimulateRequest is the body of POST /api/v1/simulate: the plan (the
// keys of POST /api/v1/plan), the workload (a generator, or the trace's
// requests inline) and the simulation's own options. The CLI's
// `kvcfg simulate -o json` runs the same code.
type SimulateRequest struct {
	Plan plan.Request `json:"plan"`
	// Workload generates the requests; Trace lists them instead.
	Workload *simulate.Generator `json:"workload,omitempty"`
	Trace    []simulate.Request  `json:"trace,omitempty"`
	Options  simulate.Options    `json:"options"`
}

// SimulateResponse is the answer: the simulated server and the summary
// (with its time series when options.timeseries_every is set).
type SimulateResponse struct {
	Model  string          `json:"model"`
	GPU    string          `json:"gpu"`
	Config simulate.Config `json:"config"`
	*simulate.Summary
}

func (s *Server) simulate(ctx context.Context, req SimulateRequest) (*SimulateResponse, error) {
	var src simulate.Source
	switch {
	case req.Workload != nil && len(req.Trace) > 0:
		return nil, badRequest(kindInvalidInput, "trace", "give either workload or trace, not both")
	case req.Workload != nil:
		if req.Workload.Requests > maxSimRequests {
			return nil, badRequest(kindInvalidInput, "workload", "workload.requests %d exceeds this server's limit of %d", req.Workload.Requests, maxSimRequests)
		}
		g, err := req.Workload.Source()
		if err != nil {
			return nil, badRequest(kindInvalidInput, "workload", "%v", err)
		}
		src = g
	case len(req.Trace) > 0:
		if len(req.Trace) > maxSimRequests {
			return nil, badRequest(kindInvalidInput, "trace", "%d trace requests exceed this server's limit of %d", len(req.Trace), maxSimRequests)
		}
		src = &simulate.SliceSource{Reqs: req.Trace}
	default:
		return nil, badRequest(kindInvalidInput, "workload", "give a workload (a generator) or a trace (the requests)")
	}
	if err := req.Options.Validate(); err != nil {
		return nil, badRequest(kindInvalidInput, "options", "%v", err)
	}
	p := req.Plan
	if err := pinCatalog(&p); err != nil {
		return nil, err
	}
	c, rep, err := simulate.FromPlan(ctx, p, req.Options)
	if err != nil {
		if errors.Is(err, simulate.ErrConfig) {
			return nil, badRequest(kindInvalidInput, "plan", "%v", err)
		}
		return nil, err
	}
	sum, err := simulate.Run(ctx, c, src)
	if err != nil {
		if errors.Is(err, simulate.ErrWorkload) {
			return nil, badRequest(kindInvalidInput, "trace", "%v", err)
		}
		return nil, err
	}
	return &SimulateResponse{Model: rep.Model, GPU: rep.GPU, Config: c, Summary: sum}, nil
}
