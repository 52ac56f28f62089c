package vllm_test

import (
	"errors"
	"strconv"

	"github.com/kvcfg/kvcfg/engine/vllm"
)

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

func isExpected(err error) bool {
	return errors.Is(err, vllm.ErrRefused) || errors.Is(err, vllm.ErrUnsupportedModel) || errors.Is(err, vllm.ErrUnsupportedDType)
}

// strconvFormat2 formats f with two decimals, as vLLM's "%.2fx".
func strconvFormat2(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }
