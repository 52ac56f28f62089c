package plan

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/kvcfg/kvcfg/engine/trtllm"
)

// referenceJSON is the Report's JSON as encoding/json writes it (the
// implementation MarshalJSON had before it wrote the bytes itself).
func referenceJSON(t testing.TB, r *Report, indent string) []byte {
	t.Helper()
	type plain Report
	nullable := func(v int64) *int64 {
		if v == 0 {
			return nil
		}
		return &v
	}
	nonNil := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	v := struct {
		plain
		FullMaxTotalNumTokens *int64   `json:"full_max_total_num_tokens"`
		SWAMaxTotalNumTokens  *int64   `json:"swa_max_total_num_tokens"`
		MaxMambaCacheSize     *int64   `json:"max_mamba_cache_size"`
		LogLines              []string `json:"log_lines"`
		Warnings              []string `json:"warnings"`
	}{plain(*r), nullable(r.FullMaxTotalNumTokens), nullable(r.SWAMaxTotalNumTokens), nullable(r.MaxMambaCacheSize), nonNil(r.LogLines), nonNil(r.Warnings)}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// randomize fills every field of v with random values, strings drawn from
// the characters encoding/json escapes.
func randomize(rng *rand.Rand, v reflect.Value) {
	pieces := []string{"", "a", "é", "<", ">", "&", "\"", "\\", "\n", "\t", "\b", "\f", "\x01", "\u2028", "\u2029", "\xff", "GiB", "→", "😀", " "}
	switch v.Kind() {
	case reflect.String:
		var s string
		for range rng.IntN(6) {
			s += pieces[rng.IntN(len(pieces))]
		}
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int64:
		switch rng.IntN(3) {
		case 0:
			v.SetInt(0)
		case 1:
			v.SetInt(rng.Int64N(1 << 40))
		default:
			v.SetInt(-rng.Int64N(1000))
		}
	case reflect.Float64:
		fs := []float64{0, 0.835, 1e-7, 3.2e-12, 1e21, 123456789.125, -0.5, 1.0 / 3, 7e20, 4.5e-6}
		v.SetFloat(fs[rng.IntN(len(fs))])
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				randomize(rng, v.Field(i))
			}
		}
	case reflect.Slice:
		if rng.IntN(3) == 0 {
			v.SetZero()
			return
		}
		n := rng.IntN(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			randomize(rng, s.Index(i))
		}
		v.Set(s)
	}
}

// The one-pass writer is byte-identical to encoding/json, compact and
// indented, on random reports.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		var r Report
		randomize(rng, reflect.ValueOf(&r).Elem())
		if i%7 == 0 {
			r.Windows = []trtllm.WindowPool{{RequestedWindow: 128, Window: 127, Layers: 18, CellSizeBytes: 36864, NumBlocks: 10}}
		}
		for _, indent := range []string{"", "  "} {
			got, err := r.AppendJSON(nil, indent)
			if err != nil {
				t.Fatal(err)
			}
			if want := referenceJSON(t, &r, indent); !bytes.Equal(got, want) {
				t.Fatalf("indent %q:\n got %s\nwant %s", indent, got, want)
			}
		}
	}
}

func BenchmarkReportJSON(b *testing.B) {
	r, err := Run(b.Context(), Request{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encoding_json_indent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetIndent("", "  ")
			type plain Report
			_ = enc.Encode(plain(*r))
		}
	})
	b.Run("append_json_indent", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 8192)
		for b.Loop() {
			buf, _ = r.AppendJSON(buf[:0], "  ")
		}
	})
}
