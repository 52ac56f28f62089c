package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
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

// explicitZeros returns the top-level keys of a JSON object body whose
// value is a zero number (or a zero size string, "0GiB"), in body order. A
// decoded Request cannot tell {"tp_size": 0} from a missing key; the body
// can.
func explicitZeros(body []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return keys
		}
		f, ok := plan.LookupFlag(key)
		if !ok || !f.NonZero || slices.Contains(keys, key) {
			continue
		}
		v := strings.TrimSpace(string(raw))
		if x, err := strconv.ParseFloat(v, 64); err == nil && x == 0 {
			keys = append(keys, key)
			continue
		}
		var str string
		if f.Kind == plan.KindSize && json.Unmarshal(raw, &str) == nil {
			if sz, err := units.ParseSize(str); err == nil && sz == 0 {
				keys = append(keys, key)
			}
		}
	}
	return keys
}

// member returns the raw value of the top-level key of a JSON object body
// (nil when absent or not an object).
func member(body []byte, key string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	return m[key]
}
