// Package edit measures how far apart two strings are, for "did you mean"
// suggestions (model names in catalog, GPU names in gpu).
package edit

// Within reports the Levenshtein distance of a and b (in bytes) when it is
// at most limit, and false otherwise. Its cost is bounded by limit, not by
// the strings: it answers at once when their lengths differ by more than
// limit, fills only the band of width 2·limit+1 around the diagonal, and
// stops at the first row whose band exceeds limit, so a megabyte-long
// name costs no more than a short one (a negative limit is never met).
func Within(a, b string, limit int) (int, bool) {
	if limit < 0 {
		return 0, false
	}
	if len(a) < len(b) {
		a, b = b, a
	}
	if len(a)-len(b) > limit {
		return 0, false
	}
	// Rows over a, columns over b; cells outside the band count as
	// limit+1 (more than any distance reported).
	over := limit + 1
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = min(j, over)
	}
	for i := 1; i <= len(a); i++ {
		lo, hi := max(1, i-limit), min(len(b), i+limit)
		if lo > 1 {
			cur[lo-1] = over
		} else {
			cur[0] = min(i, over)
		}
		best := cur[lo-1]
		for j := lo; j <= hi; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			up := over
			if j <= i-1+limit {
				up = prev[j]
			}
			d := min(up+1, cur[j-1]+1, prev[j-1]+cost, over)
			cur[j] = d
			best = min(best, d)
		}
		if hi < len(b) {
			cur[hi+1] = over
		}
		if best > limit {
			return 0, false
		}
		prev, cur = cur, prev
	}
	if d := prev[len(b)]; d <= limit {
		return d, true
	}
	return 0, false
}
