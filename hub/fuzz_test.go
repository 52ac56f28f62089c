package hub

import (
	"net/http"
	"testing"
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
