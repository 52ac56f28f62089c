package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

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
// can. It scans the body once, without a JSON decoder.
func explicitZeros(body []byte) []string {
	var keys []string
	eachMember(body, func(key, raw []byte) {
		f, ok := plan.LookupFlag(string(key))
		if !ok || !f.NonZero || slices.Contains(keys, string(key)) {
			return
		}
		if x, err := strconv.ParseFloat(string(raw), 64); err == nil && x == 0 {
			keys = append(keys, string(key))
			return
		}
		var str string
		if f.Kind == plan.KindSize && len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &str) == nil {
			if sz, err := units.ParseSize(str); err == nil && sz == 0 {
				keys = append(keys, string(key))
			}
		}
	})
	return keys
}

// member returns the raw value of the top-level key of a JSON object body
// (nil when absent or not an object).
func member(body []byte, key string) []byte {
	var out []byte
	eachMember(body, func(k, raw []byte) {
		if out == nil && string(k) == key {
			out = raw
		}
	})
	return out
}

// eachMember calls fn with each top-level key (its raw bytes, escapes
// left as they are) and raw value of a JSON object body, in order. It
// stops at the first thing that is not well-formed (the decoder reports
// it) and allocates nothing.
func eachMember(body []byte, fn func(key, raw []byte)) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(body, i)
		if i >= len(body) || body[i] != '"' {
			return
		}
		end := skipValue(body, i)
		if end < 0 {
			return
		}
		key := body[i+1 : end-1]
		i = skipSpace(body, end)
		if i >= len(body) || body[i] != ':' {
			return
		}
		i = skipSpace(body, i+1)
		end = skipValue(body, i)
		if end < 0 {
			return
		}
		fn(key, body[i:end])
		i = skipSpace(body, end)
		if i >= len(body) || body[i] != ',' {
			return
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value starting at b[i]
// (a string, an object or array with everything nested in it, or a
// literal), -1 when it does not end.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	depth := 0
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			if i = closingQuote(b, i); i < 0 {
				return -1
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i // a literal ended by the enclosing object
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	if depth == 0 {
		return i
	}
	return -1
}

// closingQuote returns the index of the quote that closes the JSON string
// opening at b[i] (escapes skipped), -1 when it does not close.
func closingQuote(b []byte, i int) int {
	for i++; i < len(b) && b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	if i >= len(b) {
		return -1
	}
	return i
}
