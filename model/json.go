package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
)

// nonFinite are the bare tokens Python's json module (and so transformers)
// writes for non-finite floats. Strict JSON rejects them.
var nonFinite = []string{"-Infinity", "Infinity", "NaN"}

// quoteNonFinite rewrites bare Infinity, -Infinity and NaN outside strings as
// JSON strings ("Infinity", ...), so encoding/json accepts the document and a
// numeric field holding one of them is reported as a type error. It returns
// the offsets (in the output) where a token was quoted, to map decoder error
// offsets back to the input.
func quoteNonFinite(data []byte) ([]byte, []int64) {
	var out []byte
	var at []int64
	inString, escaped := false, false
	last := 0
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			continue
		}
		if c != '-' && c != 'I' && c != 'N' {
			continue
		}
		for _, tok := range nonFinite {
			end := i + len(tok)
			if end > len(data) || string(data[i:end]) != tok {
				continue
			}
			if end < len(data) && isIdentByte(data[end]) {
				continue
			}
			if out == nil {
				out = make([]byte, 0, len(data)+16)
			}
			out = append(out, data[last:i]...)
			at = append(at, int64(len(out)))
			out = append(out, '"')
			out = append(out, tok...)
			out = append(out, '"')
			last = end
			i = end - 1
			break
		}
	}
	if out == nil {
		return data, nil
	}
	return append(out, data[last:]...), at
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// decodeObject decodes a config.json into a generic JSON object, numbers kept
// as json.Number.
// name, when set, is put into error messages.
func decodeObject(data []byte, name string) (map[string]any, error) {
	where := ""
	if name != "" {
		where = " " + strconv.Quote(name)
	}
	clean, quoted := quoteNonFinite(data)
	dec := json.NewDecoder(bytes.NewReader(clean))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w%s: %s", ErrSyntax, where, syntaxDetail(data, clean, quoted, err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w%s: trailing data after the top-level value", ErrSyntax, where)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w%s: the top level is %s, want an object", ErrSyntax, where, describe(v))
	}
	return m, nil
}

// syntaxDetail describes a decoder error with a line and column of the
// original input.
func syntaxDetail(orig, clean []byte, quoted []int64, err error) string {
	var se *json.SyntaxError
	off := int64(-1)
	if errors.As(err, &se) {
		off = se.Offset
	} else if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		if len(bytes.TrimSpace(orig)) == 0 {
			return "empty input"
		}
		return "unexpected end of input"
	}
	if off < 0 {
		return err.Error()
	}
	// The decoder's offset is just past the offending byte; point at it.
	if off > 0 {
		off--
	}
	// Each quoted token added two bytes before the error offset.
	n := sort.Search(len(quoted), func(i int) bool { return quoted[i] >= off })
	if n > 0 && off < quoted[n-1]+2 {
		n-- // inside the quote we added
	}
	off -= int64(2 * n)
	if off > int64(len(orig)) {
		off = int64(len(orig))
	}
	line, col := 1, 1
	for _, c := range orig[:off] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d, column %d: %v", line, col, err)
}

// describe names the JSON type of v for error messages.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "the number " + x.String()
	case string:
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return "the string " + strconv.Quote(x)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// reader collects field errors while a config is read.
type reader struct {
	file string
	errs []error
}

func (r *reader) fail(field string, err error) {
	r.errs = append(r.errs, &FieldError{File: r.file, Field: field, Err: err})
}

// object is one JSON object of the config (top level or text_config).
type object struct {
	r      *reader
	prefix string
	m      map[string]any
}

func (o object) field(key string) string { return o.prefix + key }

// get returns the value of key; ok is false when it is absent or null.
func (o object) get(key string) (any, bool) {
	if o.m == nil {
		return nil, false
	}
	v, ok := o.m[key]
	if !ok || v == nil {
		return nil, false
	}
	return v, true
}

// has reports whether key is present and not null.
func (o object) has(key string) bool {
	_, ok := o.get(key)
	return ok
}

// maxInt bounds integers read from a config; anything larger is absurd for a
// shape and could overflow products.
const maxInt = 1 << 40

func toInt(v any) (int, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%w: want an integer, got %s", ErrType, describe(v))
	}
	if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
		if i > maxInt || i < -maxInt {
			return 0, fmt.Errorf("%w: %d is absurdly large", ErrRange, i)
		}
		return int(i), nil
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || math.IsInf(f, 0) || f > maxInt || f < -maxInt {
		return 0, fmt.Errorf("%w: %s is absurdly large", ErrRange, n)
	}
	if f != math.Trunc(f) {
		return 0, fmt.Errorf("%w: want an integer, got %s", ErrType, n)
	}
	return int(f), nil
}

// int returns key as an integer (integral floats like 8.0 accepted).
func (o object) int(key string) (int, bool) {
	v, ok := o.get(key)
	if !ok {
		return 0, false
	}
	i, err := toInt(v)
	if err != nil {
		o.r.fail(o.field(key), err)
		return 0, false
	}
	return i, true
}

// firstInt returns the first present key of keys as an integer.
func (o object) firstInt(keys ...string) (int, string, bool) {
	for _, k := range keys {
		if o.has(k) {
			v, ok := o.int(k)
			return v, k, ok
		}
	}
	return 0, "", false
}

// float returns key as a float64.
func (o object) float(key string) (float64, bool) {
	v, ok := o.get(key)
	if !ok {
		return 0, false
	}
	n, isNum := v.(json.Number)
	if !isNum {
		o.r.fail(o.field(key), fmt.Errorf("%w: want a number, got %s", ErrType, describe(v)))
		return 0, false
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		o.r.fail(o.field(key), fmt.Errorf("%w: %s", ErrRange, n))
		return 0, false
	}
	return f, true
}

// str returns key as a string.
func (o object) str(key string) (string, bool) {
	v, ok := o.get(key)
	if !ok {
		return "", false
	}
	s, isStr := v.(string)
	if !isStr {
		o.r.fail(o.field(key), fmt.Errorf("%w: want a string, got %s", ErrType, describe(v)))
		return "", false
	}
	return s, true
}

// bool returns key as a boolean.
func (o object) bool(key string) (value, ok bool) {
	v, present := o.get(key)
	if !present {
		return false, false
	}
	b, isBool := v.(bool)
	if !isBool {
		o.r.fail(o.field(key), fmt.Errorf("%w: want a boolean, got %s", ErrType, describe(v)))
		return false, false
	}
	return b, true
}

// obj returns key as a nested object.
func (o object) obj(key string) (object, bool) {
	v, ok := o.get(key)
	if !ok {
		return object{r: o.r, prefix: o.field(key) + "."}, false
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		o.r.fail(o.field(key), fmt.Errorf("%w: want an object, got %s", ErrType, describe(v)))
		return object{r: o.r, prefix: o.field(key) + "."}, false
	}
	return object{r: o.r, prefix: o.field(key) + ".", m: m}, true
}

// list returns key as an array.
func (o object) list(key string) ([]any, bool) {
	v, ok := o.get(key)
	if !ok {
		return nil, false
	}
	l, isList := v.([]any)
	if !isList {
		o.r.fail(o.field(key), fmt.Errorf("%w: want an array, got %s", ErrType, describe(v)))
		return nil, false
	}
	return l, true
}

// ints returns key as an array of integers.
func (o object) ints(key string) ([]int, bool) {
	l, ok := o.list(key)
	if !ok {
		return nil, false
	}
	out := make([]int, len(l))
	for i, v := range l {
		n, err := toInt(v)
		if err != nil {
			o.r.fail(fmt.Sprintf("%s[%d]", o.field(key), i), err)
			return nil, false
		}
		out[i] = n
	}
	return out, true
}

// strs returns key as an array of strings.
func (o object) strs(key string) ([]string, bool) {
	l, ok := o.list(key)
	if !ok {
		return nil, false
	}
	out := make([]string, len(l))
	for i, v := range l {
		s, isStr := v.(string)
		if !isStr {
			o.r.fail(fmt.Sprintf("%s[%d]", o.field(key), i), fmt.Errorf("%w: want a string, got %s", ErrType, describe(v)))
			return nil, false
		}
		out[i] = s
	}
	return out, true
}
