package plan

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// MarshalJSON writes the Report with a stable key set: the pool sizes that
// apply only to some models (full/SWA pools of a hybrid sliding-window
// model, Mamba state slots) are null when they do not apply instead of
// missing, and warnings and log lines are always arrays. The keys follow
// the groups in Report order; those five come last.
//
// The bytes are exactly what encoding/json writes for the same values (a
// test holds it to that); AppendJSON writes them in one pass, indented if
// asked.
func (r Report) MarshalJSON() ([]byte, error) {
	return r.AppendJSON(make([]byte, 0, 4096), "")
}

// lastKeys are the keys MarshalJSON writes after the groups, in order.
var lastKeys = [...]string{"full_max_total_num_tokens", "swa_max_total_num_tokens", "max_mamba_cache_size", "log_lines", "warnings"}

// AppendJSON appends the Report's JSON to dst in one pass: compact when
// indent is "", else indented by indent per level as json.Encoder with
// SetIndent("", indent) writes it (without the trailing newline). An error
// is returned only for a value JSON cannot hold (a NaN or infinite float).
func (r *Report) AppendJSON(dst []byte, indent string) ([]byte, error) {
	w := jsonWriter{b: dst, indent: indent}
	w.open('{')
	w.structFields(reflect.ValueOf(r).Elem(), true)
	nullable := func(key string, v int64) {
		w.key(key)
		if v == 0 {
			w.b = append(w.b, "null"...)
		} else {
			w.b = strconv.AppendInt(w.b, v, 10)
		}
	}
	nullable(lastKeys[0], r.FullMaxTotalNumTokens)
	nullable(lastKeys[1], r.SWAMaxTotalNumTokens)
	nullable(lastKeys[2], r.MaxMambaCacheSize)
	w.key(lastKeys[3])
	w.strings(r.LogLines)
	w.key(lastKeys[4])
	w.strings(r.Warnings)
	w.close('}')
	return w.b, w.err
}

// jsonWriter appends JSON the way encoding/json (with HTML escaping) and
// its indenter write it.
type jsonWriter struct {
	b      []byte
	indent string
	depth  int
	first  bool // no member written yet at this level
	err    error
}

func (w *jsonWriter) newline() {
	if w.indent == "" {
		return
	}
	w.b = append(w.b, '\n')
	for range w.depth {
		w.b = append(w.b, w.indent...)
	}
}

func (w *jsonWriter) open(c byte) {
	w.b = append(w.b, c)
	w.depth++
	w.first = true
}

func (w *jsonWriter) close(c byte) {
	w.depth--
	if !w.first {
		w.newline()
	}
	w.b = append(w.b, c)
	w.first = false
}

// elem starts an array element or object member.
func (w *jsonWriter) elem() {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	w.newline()
}

func (w *jsonWriter) key(k string) {
	w.elem()
	w.str(k)
	w.b = append(w.b, ':')
	if w.indent != "" {
		w.b = append(w.b, ' ')
	}
}

// quotedKey writes a member's key already quoted with its colon (a
// struct field's, from the field cache).
func (w *jsonWriter) quotedKey(q string) {
	w.elem()
	w.b = append(w.b, q...)
	if w.indent != "" {
		w.b = append(w.b, ' ')
	}
}

func (w *jsonWriter) strings(s []string) {
	if len(s) == 0 {
		w.b = append(w.b, "[]"...)
		return
	}
	w.open('[')
	for _, v := range s {
		w.elem()
		w.str(v)
	}
	w.close(']')
}

const hexDigits = "0123456789abcdef"

// jsonPlain marks the bytes str copies as they are: ASCII that needs no
// escape (not a control character, quote, backslash or HTML-special).
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// str writes s quoted and escaped as encoding/json does: HTML-safe, U+2028
// and U+2029 escaped, invalid UTF-8 replaced by U+FFFD.
func (w *jsonWriter) str(s string) {
	b := append(w.b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if jsonPlain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	w.b = append(b, '"')
}

// float writes f as encoding/json does (shortest repr, exponent form below
// 1e-6 and from 1e21).
func (w *jsonWriter) float(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		if w.err == nil {
			w.err = &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
		}
		w.b = append(w.b, '0')
		return
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(w.b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	w.b = b
}

// field is one JSON member of a struct type.
type field struct {
	key       string
	quoted    string // key as JSON with its colon: "key":
	index     int
	omitEmpty bool
	embedded  bool // an embedded struct whose fields are promoted
	last      bool // one of lastKeys
	// marshals: the field's type (or its pointer) has a MarshalJSON, so
	// value goes through encoding/json; checked once per type, not per
	// value.
	marshals bool
}

var structFieldsCache sync.Map // reflect.Type → []field

func fieldsOf(t reflect.Type) []field {
	if f, ok := structFieldsCache.Load(t); ok {
		return f.([]field)
	}
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" || (!sf.IsExported() && !sf.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			out = append(out, field{index: i, embedded: true})
			continue
		}
		if name == "" {
			name = sf.Name
		}
		q := jsonWriter{}
		q.str(name)
		out = append(out, field{key: name, quoted: string(append(q.b, ':')), index: i,
			omitEmpty: strings.Contains(","+opts+",", ",omitempty,"), last: isLastKey(name),
			marshals: sf.Type.Implements(marshalerType) || reflect.PointerTo(sf.Type).Implements(marshalerType)})
	}
	f, _ := structFieldsCache.LoadOrStore(t, out)
	return f.([]field)
}

// structFields writes v's members; top skips the keys AppendJSON writes
// last.
func (w *jsonWriter) structFields(v reflect.Value, top bool) {
	for _, f := range fieldsOf(v.Type()) {
		fv := v.Field(f.index)
		if f.embedded {
			w.structFields(fv, top)
			continue
		}
		if top && f.last {
			continue
		}
		if f.omitEmpty && isEmptyValue(fv) {
			continue
		}
		w.quotedKey(f.quoted)
		if !f.marshals && w.plainValue(fv) {
			continue
		}
		w.value(fv)
	}
}

// isEmptyValue is encoding/json's omitempty test (structs are never empty).
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

func isLastKey(k string) bool {
	for _, l := range lastKeys {
		if k == l {
			return true
		}
	}
	return false
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

// marshals reports whether t or *t has a MarshalJSON (encoding/json calls
// either on an addressable value, which a Report's fields are).
func marshals(t reflect.Type) bool {
	return t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType)
}

// plainValue writes v when its kind is one a Report holds directly and its
// type has no MarshalJSON (the caller knows: field.marshals); false leaves
// it to value.
func (w *jsonWriter) plainValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		w.str(v.String())
	case reflect.Bool:
		if v.Bool() {
			w.b = append(w.b, "true"...)
		} else {
			w.b = append(w.b, "false"...)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w.b = strconv.AppendInt(w.b, v.Int(), 10)
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		w.b = strconv.AppendUint(w.b, v.Uint(), 10)
	case reflect.Float64:
		w.float(v.Float())
	case reflect.Struct:
		w.open('{')
		w.structFields(v, false)
		w.close('}')
	default:
		return false
	}
	return true
}

// walk writes a pointer to, or a slice of, values the writer handles
// itself (structs of plain fields: a report's budget terms, concurrency
// limits, pools) without a round trip through encoding/json and
// json.Indent; false leaves v to encoding/json (a nil pointer is null, as
// there; a byte slice is base64 there, so it is left).
func (w *jsonWriter) walk(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			w.b = append(w.b, "null"...)
			return true
		}
		if marshals(v.Elem().Type()) {
			return false
		}
		w.value(v.Elem())
		return true
	case reflect.Slice:
		et := v.Type().Elem()
		if et.Kind() == reflect.Uint8 || marshals(et) {
			return false
		}
		w.open('[')
		for i := range v.Len() {
			w.elem()
			w.value(v.Index(i))
		}
		w.close(']')
		return true
	}
	return false
}

// value writes one value: the kinds a Report holds directly, anything else
// through encoding/json (indented to the current depth).
func (w *jsonWriter) value(v reflect.Value) {
	if !marshals(v.Type()) {
		if w.plainValue(v) {
			return
		}
		if v.Kind() == reflect.Slice && v.IsNil() {
			w.b = append(w.b, "null"...)
			return
		}
		if v.Type() == reflect.TypeFor[[]string]() {
			w.strings(v.Interface().([]string))
			return
		}
		if w.walk(v) {
			return
		}
	}
	data, err := json.Marshal(v.Interface())
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		w.b = append(w.b, "null"...)
		return
	}
	if w.indent == "" {
		w.b = append(w.b, data...)
		return
	}
	var buf bytes.Buffer
	prefix := strings.Repeat(w.indent, w.depth)
	if err := json.Indent(&buf, data, prefix, w.indent); err != nil {
		w.b = append(w.b, data...)
		return
	}
	w.b = append(w.b, buf.Bytes()...)
}
