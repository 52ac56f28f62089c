package server

import (
	"fmt"
	"strings"
	"testing"
)

func TestDuplicateKey(t *testing.T) {
	many := func(n int, dup bool) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			fmt.Fprintf(&b, `"k%d": %d,`, i, i)
		}
		last := "end"
		if dup {
			last = "k3"
		}
		fmt.Fprintf(&b, `"%s": 0}`, last)
		return b.String()
	}
	for _, tt := range []struct{ body, want string }{
		{`{"a": 1, "b": 2}`, ""},
		{`{"a": 1, "a": 2}`, "a"},
		{`{"a": {"x": 1}, "b": {"x": 2}}`, ""},
		{`{"a": {"x": 1, "y": [1, {"x": 3}], "x": 2}}`, "x"},
		{`[{"a": 1}, {"a": 2}]`, ""},
		{`{"a": "a", "b": "a"}`, ""},
		{`{"a\"b": 1, "a\"b": 2}`, `a"b`},
		{`{"a": 1, "\u0061": 2}`, "a"},
		{`{"s": "}{,\"", "s": 1}`, "s"},
		{many(40, false), ""},
		{many(40, true), "k3"},
		{`{"a": 1, "a"`, "a"},
		{`{"a`, ""},
		{`}}}`, ""},
		{``, ""},
	} {
		if got := duplicateKey([]byte(tt.body)); got != tt.want {
			t.Errorf("duplicateKey(%.60q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

func BenchmarkDuplicateKey(b *testing.B) {
	body := []byte(`{"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "kv_cache_dtype": "fp8_e4m3", "tp_size": 2, "config": {"a": [1, 2, {"b": 3}]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if duplicateKey(body) != "" {
			b.Fatal("dup")
		}
	}
}

func TestExplicitZerosAndMember(t *testing.T) {
	body := []byte(` {"model": "m", "tp_size": 0, "config": {"tp_size": 0, "x": [0, {"a": "}"}]}, "gpu_memory": "0GiB", "mem_fraction_static": 0.0, "pp_size": 2, "tp_size": 0} `)
	got := explicitZeros(body)
	if strings.Join(got, ",") != "tp_size,gpu_memory,mem_fraction_static" {
		t.Errorf("explicitZeros = %q", got)
	}
	if m := string(member(body, "config")); m != `{"tp_size": 0, "x": [0, {"a": "}"}]}` {
		t.Errorf("member(config) = %q", m)
	}
	if m := member(body, "nope"); m != nil {
		t.Errorf("member(nope) = %q", m)
	}
	for _, bad := range []string{``, `[]`, `{"a"`, `{"a": `, `{"a": "x`, `{"a": {"b": 1}`} {
		_ = explicitZeros([]byte(bad)) // no panic on malformed input
		_ = member([]byte(bad), "a")
	}
	plain := []byte(`{"model": "m", "gpu": "H100", "tp_size": 2}`)
	if n := testing.AllocsPerRun(100, func() { explicitZeros(plain) }); n > 1 {
		t.Errorf("explicitZeros allocates %v times on a body without zeros, want at most 1 (its closure)", n)
	}
}
