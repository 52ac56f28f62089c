package server

import (
	"bytes"
	"slices"
	"unicode/utf8"

	"github.com/kvcfg/kvcfg/plan"
)

// decodePlanFast decodes the common body of POST /api/v1/plan without
// encoding/json: one flat object whose keys are flag-table keys spelled
// exactly, each given once, with a string, a number or a boolean of the
// key's kind. It reports false, leaving *r to be reset, for anything else:
// then decodeStrict decodes (or refuses) the body, so the answers and
// their errors are encoding/json's. FuzzDecodePlanFast checks that a body
// this accepts decodes to the same request there.
//
// A plan request spent a fifth of its handler in encoding/json (a decoder,
// reflection over the request's ~80 fields); this takes a tenth of that.
func decodePlanFast(body []byte, r *plan.Request) bool {
	var seenBuf [16]string
	seen := seenBuf[:0]
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return skipSpace(body, i+1) == len(body)
	}
	for {
		// The key: a plain string, no escapes.
		key, next, ok := plainString(body, i)
		if !ok {
			return false
		}
		for _, s := range seen {
			if s == key {
				return false // decodeStrict names the duplicate
			}
		}
		if len(seen) == cap(seenBuf) {
			return false
		}
		seen = append(seen, key)
		f, ok := plan.LookupFlag(key)
		if !ok || f.Key != key && !slices.Contains(f.KeyAliases, key) {
			return false
		}
		i = skipSpace(body, next)
		if i >= len(body) || body[i] != ':' {
			return false
		}
		i = skipSpace(body, i+1)
		var value string
		switch f.Kind {
		case plan.KindString:
			s, next, ok := plainString(body, i)
			if !ok || s == "" || isSpace(s[0]) || isSpace(s[len(s)-1]) {
				return false // SetField trims; encoding/json does not
			}
			value, i = s, next
		case plan.KindInt, plan.KindFloat:
			end, integer := number(body, i)
			if end < 0 || f.Kind == plan.KindInt && !integer {
				return false
			}
			value, i = string(body[i:end]), end
		case plan.KindBool:
			switch {
			case bytes.HasPrefix(body[i:], []byte("true")):
				value, i = "true", i+4
			case bytes.HasPrefix(body[i:], []byte("false")):
				value, i = "false", i+5
			default:
				return false
			}
		default:
			return false // sizes and lists: encoding/json's rules
		}
		if r.SetField(key, value) != nil {
			return false
		}
		i = skipSpace(body, i)
		if i >= len(body) {
			return false
		}
		switch body[i] {
		case ',':
			i = skipSpace(body, i+1)
		case '}':
			return skipSpace(body, i+1) == len(body)
		default:
			return false
		}
	}
}

// plainString reads the JSON string at b[i] when it has no escapes, no
// control characters and is valid UTF-8 (what encoding/json would take
// verbatim), returning its text and the index after its closing quote.
func plainString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[i+1 : j]
			if !utf8.Valid(s) {
				return "", 0, false
			}
			return string(s), j + 1, true
		case c == '\\' || c < 0x20:
			return "", 0, false
		}
	}
	return "", 0, false
}

// number returns the index after the JSON number at b[i] (-1 when there
// is none) and whether it is an integer (no fraction, no exponent).
func number(b []byte, i int) (end int, integer bool) {
	digits := func(j int) int {
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		return j
	}
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && '1' <= b[j] && b[j] <= '9':
		j = digits(j)
	default:
		return -1, false
	}
	integer = true
	if j < len(b) && b[j] == '.' {
		k := digits(j + 1)
		if k == j+1 {
			return -1, false
		}
		j, integer = k, false
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := digits(j)
		if k == j {
			return -1, false
		}
		j, integer = k, false
	}
	return j, integer
}

// isSpace reports JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
