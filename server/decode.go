package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
)

// readBody reads the whole request body, at most max bytes (larger bodies
// fail with *http.MaxBytesError, which classify maps to 413).
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, max))
}

// decodeStrict decodes body, which must hold exactly one JSON object, into
// v (a pointer to a struct). Unknown keys are rejected, and every failure is
// an *apiError naming the field at fault when there is one.
func decodeStrict(body []byte, v any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return badRequest(kindMalformedBody, "", "empty request body: send a JSON object such as {\"model\": \"meta-llama/Llama-3.1-8B-Instruct\"}")
	}
	if trimmed[0] != '{' {
		return badRequest(kindMalformedBody, "", "request body must be a JSON object")
	}
	if key := duplicateKey(trimmed); key != "" {
		return badRequest(kindInvalidInput, key, "duplicate key %q: send each key once", key)
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, trimmed, v)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest(kindMalformedBody, "", "unexpected data after the JSON object")
	}
	return nil
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
		field := te.Field
		if field == "" {
			field = culprit(body, v)
		}
		return badRequest(kindInvalidInput, field, "%s: expected %s, got JSON %s", orBody(field), jsonKind(te.Type), te.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return badRequest(kindInvalidInput, name, "unknown field %q (accepted: %s)", name, strings.Join(jsonKeys(reflect.TypeOf(v)), ", "))
	}
	// An error from a field's own UnmarshalJSON (a bad size string, say)
	// carries no field name: find the key that fails on its own.
	field := culprit(body, v)
	return badRequest(kindInvalidInput, field, "%s: %v", orBody(field), err)
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

// duplicateKey returns the first key that appears twice in one object of
// body (at any depth), "" when none does or body is not valid JSON (the
// decoder reports that). encoding/json keeps the last of duplicate keys
// silently; a planning request that says two things is refused instead.
// It scans the bytes once and allocates only for keys with escapes or for
// objects of more than 32 keys.
func duplicateKey(body []byte) string {
	type span struct{ lo, hi int }
	type frame struct {
		object bool
		first  int                 // index in keys of this object's first key
		set    map[string]struct{} // built once an object has many keys
	}
	var stackBuf [16]frame
	var keyBuf [64]span
	stack, keys := stackBuf[:0], keyBuf[:0]
	expectKey := false
	keyText := func(sp span) string {
		raw := body[sp.lo:sp.hi]
		if bytes.IndexByte(raw, '\\') < 0 {
			return string(raw)
		}
		var k string
		if json.Unmarshal(body[sp.lo-1:sp.hi+1], &k) != nil {
			return string(raw)
		}
		return k
	}
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case '{', '[':
			stack = append(stack, frame{object: c == '{', first: len(keys)})
			expectKey = c == '{'
		case '}', ']':
			if len(stack) == 0 {
				return ""
			}
			keys = keys[:stack[len(stack)-1].first]
			stack = stack[:len(stack)-1]
			expectKey = false
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1].object
		case '"':
			start := i + 1
			if i = closingQuote(body, i); i < 0 {
				return ""
			}
			if !expectKey || len(stack) == 0 {
				continue
			}
			expectKey = false
			f := &stack[len(stack)-1]
			sp := span{start, i}
			if f.set == nil && len(keys)-f.first < 32 {
				k := body[sp.lo:sp.hi]
				for _, o := range keys[f.first:] {
					if bytes.Equal(body[o.lo:o.hi], k) || (bytes.IndexByte(k, '\\') >= 0 || bytes.IndexByte(body[o.lo:o.hi], '\\') >= 0) && keyText(o) == keyText(sp) {
						return keyText(sp)
					}
				}
				keys = append(keys, sp)
				continue
			}
			if f.set == nil {
				f.set = make(map[string]struct{}, 64)
				for _, o := range keys[f.first:] {
					f.set[keyText(o)] = struct{}{}
				}
			}
			k := keyText(sp)
			if _, dup := f.set[k]; dup {
				return k
			}
			f.set[k] = struct{}{}
		}
	}
	return ""
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
