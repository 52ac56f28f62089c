package server

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestDefaultRequestTimeout(t *testing.T) {
	for _, tc := range []struct{ write, want time.Duration }{
		{30 * time.Second, 25 * time.Second},
		{time.Minute, 25 * time.Second},
		{20 * time.Second, 15 * time.Second},
		{10 * time.Second, 7500 * time.Millisecond},
		{2 * time.Second, 1500 * time.Millisecond},
	} {
		if got := defaultRequestTimeout(tc.write); got != tc.want {
			t.Errorf("write timeout %v: request timeout %v, want %v", tc.write, got, tc.want)
		}
		if got := (Config{WriteTimeout: tc.write}).withDefaults().RequestTimeout; got <= 0 || got >= tc.write {
			t.Errorf("write timeout %v: Config's request timeout %v", tc.write, got)
		}
	}
	if err := (Config{RequestTimeout: 30 * time.Second}).Validate(); err == nil || !strings.Contains(err.Error(), "request_timeout") {
		t.Errorf("a request timeout at the write timeout: %v", err)
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("é", 1000) // 2 bytes a rune: cuts land inside runes
	for _, tc := range []struct {
		name, in string
		max      int // bytes of the longest run of input kept
	}{
		{"short", `unknown model "abc"`, 3},
		{"quoted", `unknown GPU "` + long + `" (known: H100, H200)`, maxEcho},
		{"escaped", `bad "` + strings.Repeat(`\"`, 400) + `" value`, maxEcho},
		{"unquoted", "Unsupported kv_cache_dtype: " + long + long, 3 * maxEcho / 2},
	} {
		got := clipMessage(tc.in)
		if !strings.ContainsRune(got, '…') && len(tc.in) > 2*maxEcho {
			t.Errorf("%s: not clipped: %d bytes", tc.name, len(got))
		}
		if tc.name == "short" && got != tc.in {
			t.Errorf("short: %q", got)
		}
		if !strings.HasPrefix(tc.in, "Unsupported") && !strings.HasSuffix(got, tc.in[strings.LastIndexByte(tc.in, '"'):]) {
			t.Errorf("%s: the message's tail is lost: %q", tc.name, got[max(0, len(got)-60):])
		}
		if len(got) > 2*maxEcho+100 && tc.name != "unquoted" || len(got) > 3*maxEcho {
			t.Errorf("%s: %d bytes", tc.name, len(got))
		}
		if !utf8.ValidString(got) {
			t.Errorf("%s: invalid UTF-8", tc.name)
		}
	}
}
