package server

import (
	"net/http"

	"github.com/kvcfg/kvcfg/plan"
)

// FlagTable is the body of GET /api/v1/flags: the planning flag table
// (plan/flags.go) the CLI, compare, fit and the page are built from.
type FlagTable struct {
	// Flags are the planning inputs, one row each.
	Flags []plan.Flag `json:"flags"`
	// Engines are each engine's column: the request keys it is launched
	// with, in print order.
	Engines []plan.EngineColumn `json:"engines"`
}

func (s *Server) handleFlags(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, FlagTable{Flags: plan.Flags(), Engines: plan.EngineColumns()})
}
