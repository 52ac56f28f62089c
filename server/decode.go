package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kvcfg/kvcfg/plan"
	"github.com/kvcfg/kvcfg/units"
)

// decodeBody is the one request decoder of the API: it reads r's body, at
// most max bytes (larger bodies fail with *http.MaxBytesError, which
// classify maps to 413), and decodes it strictly into v (see decodeStrict).
func decodeBody(w http.ResponseWriter, r *http.Request, max int64, v any) ([]zeroKey, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		return nil, bodyReadError(err)
	}
	return decodeStrict(body, v)
}

// bodyReadError words a failed body read as the client's mistake, without
// the socket addresses of the underlying error: a body that came too
// slowly (the server's read timeout) is 408, one that ended before its
// Content-Length or broke off 400; an oversized one stays the
// *http.MaxBytesError that classify maps to 413.
func bodyReadError(err error) error {
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.As(err, &ne) && ne.Timeout():
		return &apiError{status: http.StatusRequestTimeout, kind: kindBodyRead,
			body: ErrorBody{Error: "request body too slow: it did not arrive within the server's read timeout; send the whole body at once"}}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest(kindBodyRead, "", "request body truncated: the connection ended before the body's Content-Length; send the whole body")
	}
	return badRequest(kindBodyRead, "", "request body unreadable: the connection broke off while it was read; send it again")
}

// decodeStrict decodes body, which must hold exactly one JSON object, into
// v (a pointer to a struct) with encoding/json: unknown keys, repeated keys
// (at any depth; keys differing only in case count as repeated, since
// encoding/json matches names case-insensitively), values of the wrong
// type and data after the object are refused, each with an *apiError (400)
// naming the field at fault when there is one. It also returns the flag
// keys given as 0 (see zeroKey), which the decoded value cannot tell from
// keys left out.
func decodeStrict(body []byte, v any) ([]zeroKey, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, badRequest(kindMalformedBody, "", "empty request body: send a JSON object such as {\"model\": \"meta-llama/Llama-3.1-8B-Instruct\"}")
	}
	if trimmed[0] != '{' {
		return nil, badRequest(kindMalformedBody, "", "request body must be a JSON object")
	}
	sc, scanErr := scanKeys(trimmed)
	if sc.dup != "" {
		return nil, duplicateError(sc, v)
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return nil, jsonError(err, trimmed, v)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, badRequest(kindMalformedBody, "", "unexpected data after the JSON object")
	}
	if scanErr != nil { // the decoder took what the token pass refused (not known to happen)
		return nil, badRequest(kindMalformedBody, "", "invalid JSON: %v", strings.TrimPrefix(scanErr.Error(), "json: "))
	}
	return sc.zeros, nil
}

// duplicateError refuses the repeated key of sc, naming the field of v
// it sets when it is one of the body's own keys, spelled as v spells it.
func duplicateError(sc keyScan, v any) error {
	if sc.dupTop {
		for _, k := range jsonKeys(reflect.TypeOf(v)) {
			if k != sc.dup && strings.EqualFold(k, sc.dup) {
				return badRequest(kindInvalidInput, k, "duplicate key %q: %s is given twice (keys name a field whatever their case): send each key once", sc.dup, k)
			}
		}
	}
	return badRequest(kindInvalidInput, sc.dup, "duplicate key %q: send each key once", sc.dup)
}

// zeroKey is a flag key given as 0 where 0 means nothing ({"tp_size": 0},
// {"gpu_memory": "0GiB"}): Key is the flag table's key, In is "" for the
// body's own members and the (folded) top-level key of the object it sits
// in otherwise ("base" for fit's base request).
type zeroKey struct{ In, Key string }

// zerosIn returns the keys of zeros found in the object in.
func zerosIn(zeros []zeroKey, in string) []string {
	var keys []string
	for _, z := range zeros {
		if z.In == in {
			keys = append(keys, z.Key)
		}
	}
	return keys
}

// keyScan is what scanKeys learns in its one pass over a body.
type keyScan struct {
	dup    string    // the first key repeated in its object, as sent; "" when none
	dupTop bool      // whether dup is a key of the body's own object
	zeros  []zeroKey // in body order
}

// scanFrame is an object or array scanKeys is inside.
type scanFrame struct {
	object bool
	first  int                 // index in the key stack of this object's first key
	set    map[string]struct{} // the folded keys, once the object has many
	key    string              // the object's member being read (folded)
}

// manyKeys is the number of keys an object holds before scanKeys indexes
// them in a map instead of comparing each new key with all before it.
const manyKeys = 16

// maxDepth is encoding/json's limit on nesting: scanKeys stops there
// (json.Decoder.Token has no limit of its own) and leaves the error to the
// decoder.
const maxDepth = 10000

// scanKeys reads the JSON value of body token by token (json.Decoder.Token)
// and reports the first repeated key and the zero flag values (see
// zeroKey). It stops at the end of the first value or at the first syntax
// error, which it returns (the decoder words it for the client).
func scanKeys(body []byte) (keyScan, error) {
	var sc keyScan
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stackBuf [8]scanFrame
	var keyBuf [32]string
	stack, keys := stackBuf[:0], keyBuf[:0]
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return sc, err
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if len(stack) == maxDepth {
					return sc, errors.New("json: exceeded max depth")
				}
				stack = append(stack, scanFrame{object: d == '{', first: len(keys)})
				expectKey = d == '{'
				continue
			}
			keys = keys[:stack[len(stack)-1].first]
			stack = stack[:len(stack)-1]
		} else if expectKey {
			f := &stack[len(stack)-1]
			f.key = foldKey(tok.(string))
			if keys, sc.dup = addKey(f, keys, f.key); sc.dup != "" {
				sc.dup, sc.dupTop = tok.(string), len(stack) == 1
				return sc, nil
			}
			expectKey = false
			continue
		} else if z, ok := zeroValue(stack, tok); ok {
			sc.zeros = append(sc.zeros, z)
		}
		if len(stack) == 0 {
			return sc, nil
		}
		expectKey = stack[len(stack)-1].object
	}
}

// addKey adds the folded key k to the object f whose keys sit on the key
// stack from f.first; it returns the stack and k when f holds k already.
func addKey(f *scanFrame, keys []string, k string) ([]string, string) {
	if f.set == nil && len(keys)-f.first < manyKeys {
		if slices.Contains(keys[f.first:], k) {
			return keys, k
		}
		return append(keys, k), ""
	}
	if f.set == nil {
		f.set = make(map[string]struct{}, 2*manyKeys)
		for _, o := range keys[f.first:] {
			f.set[o] = struct{}{}
		}
	}
	if _, dup := f.set[k]; dup {
		return keys, k
	}
	f.set[k] = struct{}{}
	return keys, ""
}

// zeroValue reports the scalar tok, the value of the current member of
// the innermost object of stack, as a zeroKey when that member is a
// NonZero flag given as 0, in the body's object or one nested in it.
func zeroValue(stack []scanFrame, tok json.Token) (zeroKey, bool) {
	var z zeroKey
	switch {
	case len(stack) == 1:
	case len(stack) == 2 && stack[0].object && stack[1].object:
		z.In = stack[0].key
	default:
		return z, false
	}
	// The value first: most are not zero, and then the flag table is not
	// consulted. Every spelling of a zero has a digit 0.
	num, isNum := tok.(json.Number)
	str, isStr := tok.(string)
	switch {
	case isNum:
		if x, err := strconv.ParseFloat(string(num), 64); err != nil || x != 0 {
			return z, false
		}
	case !isStr || strings.IndexByte(str, '0') < 0:
		return z, false
	}
	f, ok := plan.LookupFlag(stack[len(stack)-1].key)
	if !ok || !f.NonZero || isStr && f.Kind != plan.KindSize {
		return z, false
	}
	z.Key = f.Key
	if isStr {
		sz, err := units.ParseSize(str)
		return z, err == nil && sz == 0
	}
	return z, true
}

// foldKey maps a JSON key to one spelling per class of keys that
// encoding/json takes for the same field (its names match under
// strings.EqualFold): each rune becomes the smallest rune of its
// unicode.SimpleFold orbit, ASCII letters lower case. Lower-case ASCII
// keys come back as they are, without allocating.
func foldKey(k string) string {
	plain := true
	for i := 0; i < len(k) && plain; i++ {
		c := k[i]
		plain = c < utf8.RuneSelf && (c < 'A' || c > 'Z')
	}
	if plain {
		return k
	}
	return strings.Map(func(r rune) rune {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		if 'A' <= m && m <= 'Z' {
			m += 'a' - 'A'
		}
		return m
	}, k)
}

// jsonError turns an encoding/json error into an *apiError.
func jsonError(err error, body []byte, v any) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return badRequest(kindMalformedBody, "", "invalid JSON at byte %d: %v", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return badRequest(kindMalformedBody, "", "invalid JSON: unexpected end of input")
	case errors.As(err, &te):
		field := jsonPath(reflect.TypeOf(v), te.Field)
		if field == "" {
			field = culprit(body, v)
		}
		return badRequest(kindInvalidInput, field, "%s: expected %s, got JSON %s", orBody(field), jsonKind(te.Type), te.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = clip(strings.Trim(name, `"`))
		return badRequest(kindInvalidInput, name, "unknown field %q (accepted: %s)", name, strings.Join(jsonKeys(reflect.TypeOf(v)), ", "))
	}
	// An error from a field's own UnmarshalJSON (a bad size string, say)
	// carries no field name: find the key that fails on its own.
	field := culprit(body, v)
	return badRequest(kindInvalidInput, field, "%s: %v", orBody(field), err)
}

// jsonPath rewrites the field path of an *json.UnmarshalTypeError
// (Go's "Request.tp_size" for a key of the plan request embedded in a
// compare request) as the client sends it ("tp_size"): the names of
// embedded structs without a JSON name of their own are dropped, the rest
// kept as the JSON keys they are.
func jsonPath(t reflect.Type, path string) string {
	if path == "" {
		return ""
	}
	var out []string
	for part := range strings.SplitSeq(path, ".") {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
			t = t.Elem()
		}
		var next reflect.Type
		embedded := false
		if t != nil && t.Kind() == reflect.Struct {
			if f, ok := t.FieldByName(part); ok && f.Anonymous && f.Tag.Get("json") == "" {
				next, embedded = f.Type, true
			} else if f, ok := fieldByJSONName(t, part); ok {
				next = f.Type
			}
		}
		if !embedded {
			out = append(out, part)
		}
		t = next
	}
	return strings.Join(out, ".")
}

// fieldByJSONName finds the field of struct t (embedded structs included)
// whose JSON key is name.
func fieldByJSONName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case key == name:
			return f, true
		case key == "" && f.Anonymous:
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if g, ok := fieldByJSONName(et, name); ok {
					return g, true
				}
			}
		case key == "" && f.Name == name:
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func orBody(field string) string {
	if field == "" {
		return "request body"
	}
	return field
}

// culprit returns the first top-level key of body (in sorted order) whose
// value alone fails to decode into a fresh value of v's type, or "".
func culprit(body []byte, v any) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	t := reflect.TypeOf(v)
	if t.Kind() != reflect.Pointer {
		return ""
	}
	for _, k := range keys {
		one, err := json.Marshal(map[string]json.RawMessage{k: m[k]})
		if err != nil {
			continue
		}
		if json.Unmarshal(one, reflect.New(t.Elem()).Interface()) != nil {
			return k
		}
	}
	return ""
}

// jsonKeys lists the JSON keys of the struct type t (or pointer to it),
// including those of embedded structs, sorted.
func jsonKeys(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			keys = append(keys, jsonKeys(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		keys = append(keys, name)
	}
	slices.Sort(keys)
	return keys
}

// jsonKind words a Go type as the JSON a client should send.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	if t.PkgPath() != "" && t.Name() == "Size" {
		return `a size (bytes as a number, or a string such as "80GiB")`
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(jsonKind(t.Elem()), "an "), "a ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "another value"
}
