package edit

import (
	"strings"
	"testing"
)

// Distance is the reference Within is checked against (nothing outside the
// tests needs the unbounded distance): the Levenshtein distance of a and b,
// counted in bytes, the fewest insertions, deletions and substitutions that
// turn a into b.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

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

// TestWithin checks Within against Distance on every pair and limit: the
// same distance when it is within the limit, false otherwise.
func TestWithin(t *testing.T) {
	words := []string{"", "a", "ab", "plan", "plna", "pla", "kitten", "sitting", "Qwen/Qwen3-8B", "qwen/qwen3-8b",
		"H100", "H200", "meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-70B-Instruct", "deepseek-ai/DeepSeek-V3", "xxxxxxxxxxxxxxxx"}
	for _, a := range words {
		for _, b := range words {
			want := Distance(a, b)
			for limit := -1; limit <= 40; limit++ {
				d, ok := Within(a, b, limit)
				if ok != (limit >= 0 && want <= limit) || ok && d != want {
					t.Fatalf("Within(%q, %q, %d) = %d, %v; Distance %d", a, b, limit, d, ok, want)
				}
			}
		}
	}
}

// TestWithinLongInput: a megabyte against a catalog name is answered from
// the lengths, and two long strings cost the band, not their product.
func TestWithinLongInput(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	if _, ok := Within(long, "meta-llama/Llama-3.1-8B-Instruct", 10); ok {
		t.Fatal("a 1 MiB name within 10 edits of a catalog name")
	}
	other := strings.Repeat("x", 1<<20-3) + "abc"
	if d, ok := Within(long, other, 5); !ok || d != 3 {
		t.Fatalf("Within(1 MiB, 1 MiB less 3 edits, 5) = %d, %v", d, ok)
	}
}

func BenchmarkDistanceLong(b *testing.B) {
	long := strings.Repeat("x", 1<<14)
	for b.Loop() {
		Distance(long, "meta-llama/Llama-3.1-8B-Instruct")
	}
}

func BenchmarkWithinLong(b *testing.B) {
	long := strings.Repeat("x", 1<<14)
	for b.Loop() {
		Within(long, "meta-llama/Llama-3.1-8B-Instruct", 16)
	}
}
