package plan

import (
	"math"
	"testing"
)

func TestGroup3(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {-1000, "-1,000"}, {-999, "-999"},
		{1250238, "1,250,238"}, {100000, "100,000"}, {math.MaxInt64, "9,223,372,036,854,775,807"},
		{math.MinInt64, "-9,223,372,036,854,775,808"},
	} {
		if got := group3(tt.n); got != tt.want {
			t.Errorf("group3(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestMDEscape(t *testing.T) {
	if got := mdEscape("a | b || c"); got != `a \| b \|\| c` {
		t.Errorf("mdEscape = %q", got)
	}
}
