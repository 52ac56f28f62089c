//go:build unix

package cli

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvcfg/kvcfg/internal/testwait"
)

// runWithin is runKV that fails the test when the command has not
// returned in 5 s (a FIFO's open waits for a writer forever).
func runWithin(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	type result struct {
		out, err string
		code     int
	}
	r := testwait.Within(t, 5*time.Second, "kvcfg "+strings.Join(args, " "), func() result {
		out, errs, code := runKV(t, stdin, args...)
		return result{out, errs, code}
	})
	return r.out, r.err, r.code
}

// TestFileInputsRefuseSpecialFiles: every file flag refuses a named pipe,
// a device and a directory (a model directory without config.json says
// so) at once, with exit status 2 and what the path is. Before, the FIFOs
// blocked in open and /dev/zero was read until memory ran out (7.5 GB for
// --model).
func TestFileInputsRefuseSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "in.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	const (
		isFIFO = "is a named pipe (FIFO)"
		isDev  = "/dev/zero is a character device"
		isDir  = "is a directory"
		stream = "or stream it on standard input with --trace -"
	)
	for _, tc := range []struct {
		args []string
		says []string
	}{
		{[]string{"plan", "--gpu", "H100", "--model", fifo}, []string{isFIFO, "give a config.json file or a model directory"}},
		{[]string{"inspect", "--model", fifo}, []string{isFIFO}},
		{[]string{"simulate", "--gpu", "H100", "--trace", fifo}, []string{"--trace: ", isFIFO, stream}},
		{[]string{"fit", "--gpu", "H100", "--trace", fifo}, []string{"--trace: ", isFIFO, stream}},
		{[]string{"quant-error", "--input", fifo}, []string{"--input: ", isFIFO}},
		{[]string{"plan", "--gpu", "H100", "--model", "/dev/zero"}, []string{isDev}},
		{[]string{"simulate", "--gpu", "H100", "--trace", "/dev/zero"}, []string{isDev}},
		{[]string{"quant-error", "--input", "/dev/zero"}, []string{isDev}},
		{[]string{"plan", "--gpu", "H100", "--model", dir}, []string{"no config.json in directory"}},
		{[]string{"simulate", "--gpu", "H100", "--trace", dir}, []string{isDir}},
		{[]string{"quant-error", "--input", dir}, []string{isDir}},
	} {
		_, stderr, code := runWithin(t, "", tc.args...)
		ok := code == 2
		for _, s := range tc.says {
			ok = ok && strings.Contains(stderr, s)
		}
		if !ok {
			t.Errorf("kvcfg %s: exit %d, %q; want exit 2 saying %q", strings.Join(tc.args, " "), code, stderr, tc.says)
		}
	}
}

// TestInputCaps: what is read has a cap, and going over it is an error
// that names the cap and what to do (before: quant-error allocated what a
// header said, up to 2^31 elements, and a trace on standard input was cut
// at 1 GiB without a word).
func TestInputCaps(t *testing.T) {
	dir := t.TempDir()
	// A .npy header for 2^28 float32 elements, without the data.
	hdr := "{'descr': '<f4', 'fortran_order': False, 'shape': (268435456,), }"
	hdr += strings.Repeat(" ", 63-(10+len(hdr))%64) + "\n"
	npyFile := filepath.Join(dir, "big.npy")
	if err := os.WriteFile(npyFile, append([]byte("\x93NUMPY\x01\x00"+string([]byte{byte(len(hdr)), byte(len(hdr) >> 8)})), hdr...), 0o644); err != nil {
		t.Fatal(err)
	}
	// A safetensors file with one BF16 tensor of 2^28 elements: the data
	// section is a hole (sparse), so the file is valid and costs nothing.
	js := `{"kv":{"dtype":"BF16","shape":[268435456],"data_offsets":[0,536870912]}}`
	var st bytes.Buffer
	_ = binary.Write(&st, binary.LittleEndian, uint64(len(js)))
	st.WriteString(js)
	stFile := filepath.Join(dir, "big.safetensors")
	if err := os.WriteFile(stFile, st.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(stFile, int64(st.Len())+1<<29); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		stdin string
		args  []string
		says  string
	}{
		{"", []string{"quant-error", "--input", npyFile}, "quant-error measures at most 134217728 elements (2^27)"},
		{"", []string{"quant-error", "--input", stFile}, "has 268435456 elements; quant-error measures at most 134217728 (2^27)"},
		{strings.Repeat(`{"arrival_s":0,"prompt_tokens":100,"output_tokens":10}`+"\n", 40), []string{"simulate", "--gpu", "H100", "--engine", "sglang,vllm", "--compare", "--trace", "-"},
			"standard input holds more than 1 KiB, the most read from it"},
	} {
		maxStdinTrace = 1 << 10
		_, stderr, code := runWithin(t, tc.stdin, tc.args...)
		maxStdinTrace = 1 << 30
		if code != 2 || !strings.Contains(stderr, tc.says) {
			t.Errorf("kvcfg %s: exit %d, %q; want exit 2 saying %q", strings.Join(tc.args, " "), code, stderr, tc.says)
		}
	}
}

// TestQuantStdinCaps: kvcfg quant stops at 2^20 values and at a 16 MiB
// line with an error that names the cap (before: every value of `yes 0`
// was kept until memory ran out; /dev/zero gave bufio's "token too long").
func TestQuantStdinCaps(t *testing.T) {
	for _, tc := range []struct{ stdin, says string }{
		{strings.Repeat("0\n", 1<<20+1), "standard input holds more than 1048576 values"},
		{strings.Repeat("0", 16<<20+1), "line 1 is longer than 16 MiB"},
	} {
		_, stderr, code := runWithin(t, tc.stdin, "quant", "--dtype", "fp8_e4m3")
		if code == 0 || !strings.Contains(stderr, tc.says) {
			t.Errorf("exit %d, %q; want an error saying %q", code, stderr, tc.says)
		}
	}
}
