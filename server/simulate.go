package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/simulate"
)

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
		if err := s.checkRequests(req.Workload, req.Trace); err != nil {
			return nil, err
		}
		g, err := req.Workload.Source()
		if err != nil {
			return nil, badRequest(kindInvalidInput, "workload", "%v", err)
		}
		src = g
	case len(req.Trace) > 0:
		if err := s.checkRequests(nil, req.Trace); err != nil {
			return nil, err
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
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c.Progress = stepBudget(s.cfg.MaxSimSteps, cancel)
	sum, err := s.cfg.Simulate(ctx, c, src)
	if err != nil {
		if errors.Is(context.Cause(ctx), errStepBudget) {
			return nil, &apiError{status: http.StatusUnprocessableEntity, kind: kindOverBudget, body: ErrorBody{Field: "workload",
				Error: fmt.Sprintf("simulation stopped after %d steps, this server's limit (serve --max-sim-steps): simulate fewer requests or shorter ones, or run `kvcfg simulate` locally", s.cfg.MaxSimSteps)}}
		}
		if errors.Is(err, simulate.ErrWorkload) {
			return nil, badRequest(kindInvalidInput, "trace", "%v", err)
		}
		return nil, err
	}
	c.Progress = nil
	return &SimulateResponse{Model: rep.Model, GPU: rep.GPU, Config: c, Summary: sum}, nil
}

// checkRequests refuses a workload or trace over Config.MaxSimRequests.
func (s *Server) checkRequests(g *simulate.Generator, trace []simulate.Request) error {
	max := s.cfg.MaxSimRequests
	if g != nil && g.Requests > max {
		return badRequest(kindInvalidInput, "workload", "workload.requests %d exceeds this server's limit of %d (serve --max-sim-requests): simulate fewer, or run the kvcfg CLI", g.Requests, max)
	}
	if len(trace) > max {
		return badRequest(kindInvalidInput, "trace", "%d trace requests exceed this server's limit of %d (serve --max-sim-requests): send fewer, or run the kvcfg CLI", len(trace), max)
	}
	return nil
}
