package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/kvcfg/kvcfg/plan"
)

func TestScanKeysDuplicates(t *testing.T) {
	many := func(n int, dup string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			fmt.Fprintf(&b, `"k%d": %d,`, i, i)
		}
		fmt.Fprintf(&b, `"%s": 0}`, dup)
		return b.String()
	}
	for _, tt := range []struct{ body, want string }{
		{`{"a": 1, "b": 2}`, ""},
		{`{"a": 1, "a": 2}`, "a"},
		{`{"a": {"x": 1}, "b": {"x": 2}}`, ""},
		{`{"a": {"x": 1, "y": [1, {"x": 3}], "x": 2}}`, "x"},
		{`{"a": [{"a": 1}, {"a": 2}]}`, ""},
		{`{"a": "a", "b": "a"}`, ""},
		{`{"a\"b": 1, "a\"b": 2}`, `a"b`},
		{`{"a": 1, "\u0061": 2}`, `a`},
		{`{"s": "}{,\"", "s": 1}`, "s"},
		// encoding/json matches names case-insensitively: these name one
		// field twice.
		{`{"gpu": "H100", "GPU": "A100-80GB"}`, "GPU"},
		{`{"tp_size": 2, "Tp_Size": 4}`, "Tp_Size"},
		{"{\"k\": 1, \"\u212a\": 2}", "\u212a"}, // KELVIN SIGN folds to k
		{"{\"s\": 1, \"\u017f\": 2}", "\u017f"}, // LATIN SMALL LETTER LONG S folds to s
		{`{"é": 1, "É": 2}`, "É"},
		{`{"a": 1, "b": {"A": 1}}`, ""},
		{many(40, "end"), ""},
		{many(40, "k3"), "k3"},
		{many(40, "K39"), "K39"},
		{many(8, "K3"), "K3"},
		{`{"a": 1, "a"`, "a"},
		{`{"a`, ""},
		{`{"a": 1} {"a": 2}`, ""},
	} {
		sc, _ := scanKeys([]byte(tt.body))
		if sc.dup != tt.want {
			t.Errorf("scanKeys(%.60q).dup = %q, want %q", tt.body, sc.dup, tt.want)
		}
	}
}

func TestScanKeysZeros(t *testing.T) {
	body := []byte(` {"model": "m", "tp_size": 0, "config": {"tp_size": 0, "x": [0, {"a": "}"}]}, "GPU_Memory": "0GiB", "mem_fraction_static": 0.0, "pp_size": 2, "tensor_parallel_size": -0, "base": {"dp_size": 0e5, "tp_sizes": [0]}} `)
	sc, err := scanKeys(body)
	if err != nil || sc.dup != "" {
		t.Fatalf("scanKeys: %+v, %v", sc, err)
	}
	want := []zeroKey{{"", "tp_size"}, {"config", "tp_size"}, {"", "gpu_memory"}, {"", "mem_fraction_static"}, {"", "tp_size"}, {"base", "dp_size"}}
	if !reflect.DeepEqual(sc.zeros, want) {
		t.Errorf("zeros = %q, want %q", sc.zeros, want)
	}
	if got := zerosIn(sc.zeros, ""); strings.Join(got, ",") != "tp_size,gpu_memory,mem_fraction_static,tp_size" {
		t.Errorf(`zerosIn("") = %q`, got)
	}
	for _, bad := range []string{``, `[]`, `{"a"`, `{"a": `, `{"a": "x`, `{"a": {"b": 1}`, `}}}`, `{"a": 1}}`} {
		_, _ = scanKeys([]byte(bad)) // no panic on malformed input
	}
	deep := `{"a": ` + strings.Repeat("[", 1<<20-8) // a body's worth of nesting
	if _, err := scanKeys([]byte(deep)); err == nil || !strings.Contains(err.Error(), "max depth") {
		t.Errorf("scanKeys of %d nested arrays: %v, want the depth limit", 1<<20-8, err)
	}
	var req plan.Request
	if _, err := decodeStrict([]byte(deep), &req); err == nil {
		t.Errorf("decodeStrict took %d nested arrays", 1<<20-8)
	}
}

func TestFoldKey(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"tp_size", "tp_size"}, {"TP_SIZE", "tp_size"}, {"Gpu", "gpu"}, {"\u212a", "k"}, {"\u017f", "s"},
		{"É", "É"}, {"é", "É"}, {"", ""}, {"a-b.c", "a-b.c"},
	} {
		if got := foldKey(tt.in); got != tt.want {
			t.Errorf("foldKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { foldKey("kv_cache_dtype") }); n != 0 {
		t.Errorf("foldKey allocates %v times on a lower-case key", n)
	}
}

// decodeBodies are bodies of every shape for the decoder's tests and fuzz
// seeds.
var decodeBodies = []string{
	`{"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "kv_cache_dtype": "fp8_e4m3"}`,
	`{}`, ` { } `, `{"tp_size":2,"context_length":32768,"mem_fraction_static":0.85,"enable_dp_attention":true}`,
	`{"tensor_parallel_size": 4, "engine": "vllm", "gpu_memory_utilization": 9e-1}`,
	`{"tp_size": -0, "context_length": 1e3}`, `{"tp_size": 2.0}`, `{"tp_size": "2"}`, `{"tp_size": 01}`,
	`{"mem_fraction_static": 1e400}`, `{"mem_fraction_static": .5}`, `{"mem_fraction_static": 5.}`,
	`{"enable_dp_attention": True}`, `{"enable_dp_attention": null}`, `{"gpu": null}`,
	`{"Model": "x"}`, `{"model": " H100"}`, `{"gpu": "H\u0031"}`, `{"gpu": ""}`, `{"gpu": "H100", "gpu": "A100"}`,
	`{"gpu": "H100", "GPU": "A100-80GB"}`, `{"gpu": "H100",}`, `{"gpu": "H100"} x`, `{"gpu": "H100"`, `{"gpu" "H100"}`,
	`[]`, ``, `{"nope": 1}`, `{"--tp-size": 2}`, `{"gpu_memory": "80GiB"}`, `{"gpu_memory": "0GiB"}`,
	`{"gpu_memory": 85899345920}`, `{"cuda_graph_bs": [1, 2]}`, `{"config": {"a": 1, "A": 2}}`,
	"{\"gpu\": \"H100\xff\"}", "{\"gpu\": \"a\tb\"}", `{"model": "Qwen/Qwen3-8B", "revision": "main"}`,
}

// checkDecode decodes body strictly as a plan request: an accepted body
// decodes to what encoding/json gives alone, with its zero flags named by
// their table keys; a refused one is a 400 with a message.
func checkDecode(t *testing.T, body []byte) {
	t.Helper()
	var got plan.Request
	zeros, err := decodeStrict(body, &got)
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) || ae.status != 400 || ae.body.Error == "" {
			t.Fatalf("%q: error %#v is not a 400 with a message", body, err)
		}
		return
	}
	var want plan.Request
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&want); err != nil {
		t.Fatalf("%q: decodeStrict took what encoding/json refuses: %v", body, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decodeStrict %+v, encoding/json %+v", body, got, want)
	}
	for _, z := range zeros {
		if f, ok := plan.LookupFlag(z.Key); !ok || f.Key != z.Key || !f.NonZero {
			t.Fatalf("%q: zero key %+v is not a NonZero flag key", body, z)
		}
	}
}

func TestDecodeStrict(t *testing.T) {
	for _, b := range decodeBodies {
		checkDecode(t, []byte(b))
	}
	for _, tt := range []struct{ body, err, field string }{
		{`{"gpu": "H100", "GPU": "A100-80GB"}`, `duplicate key "GPU": gpu is given twice`, "gpu"},
		{`{"gpu": "H100", "gpu": "A100-80GB"}`, `duplicate key "gpu": send each key once`, "gpu"},
		{`{"Model": "x", "MODEL": "y"}`, `duplicate key "MODEL": model is given twice`, "model"},
		{`{"config": {"model": 1, "Model": 2}}`, `duplicate key "Model": send each key once`, "Model"},
		{`{"tp_size": "two"}`, "tp_size: expected an integer", "tp_size"},
		{`{"modle": "x"}`, `unknown field "modle"`, "modle"},
		{`{"gpu": "H100"} x`, "unexpected data after the JSON object", ""},
	} {
		_, err := decodeStrict([]byte(tt.body), new(plan.Request))
		var ae *apiError
		if !errors.As(err, &ae) || !strings.Contains(ae.body.Error, tt.err) || ae.body.Field != tt.field {
			t.Errorf("%s: %v, want %q naming %q", tt.body, err, tt.err, tt.field)
		}
	}
}

// FuzzDecodeStrict checks the one request decoder on arbitrary bodies (see
// checkDecode); FuzzPlanHandler drives it through the handlers.
func FuzzDecodeStrict(f *testing.F) {
	for _, b := range decodeBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkDecode(t, body) })
}

func BenchmarkDecodeStrict(b *testing.B) {
	body := []byte(decodeBodies[0])
	b.ReportAllocs()
	for b.Loop() {
		var r plan.Request
		if _, err := decodeStrict(body, &r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScanKeys(b *testing.B) {
	body := []byte(`{"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "kv_cache_dtype": "fp8_e4m3", "tp_size": 2, "config": {"a": [1, 2, {"b": 3}]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if sc, _ := scanKeys(body); sc.dup != "" {
			b.Fatal("dup")
		}
	}
}
