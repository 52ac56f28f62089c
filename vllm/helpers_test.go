package vllm_test

import "strconv"

func strconvFormat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func commasI(n int64) string {
	s := strconv.FormatInt(n, 10)
	out := ""
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out += ","
		}
		out += string(c)
	}
	return out
}
