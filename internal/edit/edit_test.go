package edit

import "testing"

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"plan", "plan", 0}, {"", "abc", 3}, {"abc", "", 3},
		{"plna", "plan", 2}, {"pla", "plan", 1}, {"kitten", "sitting", 3},
		{"Qwen/Qwen3-8B", "qwen/qwen3-8b", 3}, {"H100", "H200", 1},
	} {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := Distance(tt.b, tt.a); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}
