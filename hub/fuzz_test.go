package hub

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/kvcfg/kvcfg/format/safetensors"
)

// FuzzContentRange: any header value parses or is refused, never panics,
// and a parsed range is what it says.
func FuzzContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-7/100", "bytes 8-99/*", "bytes */100", "bytes 5-1/3", "", "bytes -1--2/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, b, total, ok := parseContentRange(s)
		if ok && total < -1 {
			t.Errorf("%q: total %d", s, total)
		}
		_ = a
		_ = b
	})
}

// FuzzWaitHint: a 429's headers never give a negative wait.
func FuzzWaitHint(f *testing.F) {
	f.Add(`"resolvers";r=0;t=4`, "3")
	f.Add(`"api";r=10;t=-5`, "-1")
	f.Fuzz(func(t *testing.T, rl, ra string) {
		h := http.Header{}
		h.Set("RateLimit", rl)
		h.Set("Retry-After", ra)
		if d := waitHint(h); d < 0 {
			t.Errorf("RateLimit %q Retry-After %q: wait %s", rl, ra, d)
		}
	})
}

func TestWaitHint(t *testing.T) {
	for _, tc := range []struct {
		rl, ra string
		want   int
	}{
		{`"resolvers";r=0;t=172`, "", 173},
		{`"resolvers";r=5;t=172`, "7", 7},
		{"", "9", 9},
		{"", "Wed, 21 Oct 2026 07:28:00 GMT", 0},
		{"", "", 0},
	} {
		h := http.Header{}
		h.Set("RateLimit", tc.rl)
		h.Set("Retry-After", tc.ra)
		if got := waitHint(h); int(got.Seconds()) != tc.want {
			t.Errorf("%q %q: %s, want %ds", tc.rl, tc.ra, got, tc.want)
		}
	}
}

func TestSummaryRoundTrip(t *testing.T) {
	s := &summary{Repo: "a/b", Commit: "0123456789abcdef0123456789abcdef01234567", Config: []byte(`{"x": 1}` + "\n"),
		QuantConfig: []byte(`{"quantization": {}}`),
		Shards: []shard{
			{File: "model.safetensors", Size: 123, SHA256: "ab", Header: safetensors.Header{DataOffset: 80, Metadata: map[string]string{"format": "pt"},
				Tensors: []safetensors.TensorInfo{
					{Name: "plain.weight", DType: "BF16", Shape: []int64{2, 3}, Begin: 0, End: 12},
					{Name: "odd\tname\n\"quoted\"\\é", DType: "F4", Shape: []int64{}, Begin: 12, End: 12},
					{Name: "zero", DType: "F32", Shape: []int64{0, 5}, Begin: 12, End: 12},
				}}},
			{File: "b.safetensors", Header: safetensors.Header{DataOffset: 8, Tensors: []safetensors.TensorInfo{}}},
		}}
	b, err := encodeSummary(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeSummary(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Shards[0].Header, s.Shards[0].Header) || string(got.Config) != string(s.Config) ||
		string(got.QuantConfig) != string(s.QuantConfig) || len(got.Shards[1].Header.Tensors) != 0 {
		t.Errorf("round trip:\n%+v\n%+v", got.Shards[0].Header, s.Shards[0].Header)
	}
	for _, bad := range []string{"", "kvcfg-hub-summary 1\n{}\n", string(b[:len(b)-3]), string(b) + "x"} {
		if _, err := decodeSummary([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// FuzzDecodeSummary: a damaged cache file is refused, never a panic, and
// what decodes encodes back to an equal summary.
func FuzzDecodeSummary(f *testing.F) {
	s := &summary{Repo: "a/b", Commit: "c", Config: []byte(`{}`), Shards: []shard{{File: "m.safetensors", Header: safetensors.Header{
		DataOffset: 16, Tensors: []safetensors.TensorInfo{{Name: "t", DType: "BF16", Shape: []int64{2}, End: 4}}}}}}
	b, _ := encodeSummary(s)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSummary(b)
		if err != nil {
			return
		}
		b2, err := encodeSummary(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := decodeSummary(b2)
		if err != nil || !reflect.DeepEqual(s2.Shards, s.Shards) {
			t.Errorf("re-encoded summary differs: %v", err)
		}
	})
}

// TestDecodeSummaryCounts: a summary whose tensor count the file cannot
// hold (negative, huge) is refused before anything is sized from it.
func TestDecodeSummaryCounts(t *testing.T) {
	for _, n := range []string{"-1", "1000000000000000", "2"} {
		b := []byte(summaryMagic + " 2\n" + `{"format":2,"repo":"a/b","commit":"c","config":"e30=","shards":[{"file":"x","size":1,"data_offset":8,"tensors":` + n + `}]}` + "\n" + "\"a\"\tF16\t1\t0\t2\n")
		if _, err := decodeSummary(b); err == nil {
			t.Errorf("tensors %s: decoded", n)
		}
	}
}
