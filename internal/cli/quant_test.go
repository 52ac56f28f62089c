package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/format/npy"
	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/quant"
)

func runCLI(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func TestQuantCmdJSON(t *testing.T) {
	// vector fp4_mx_block16-001 and fp8_e4m3fn satfinite vectors
	out, errs, code := runCLI(t, "0.25 0.75 1.25 1.75 2.5 3.5 5 6 -0.25 -0.75 -1.25 -1.75 -2.5 -3.5 -5 -6\n0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		"quant", "--dtype", "fp4_mx_block16", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res quantResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Blocks) != 2 || res.DType != "fp4_mx_block16" {
		t.Fatalf("result %+v", res)
	}
	b := res.Blocks[0]
	if b.ScaleCode != "0x7f" || b.PayloadHex != "21436577a9cbedff" || b.Codes[0] != "0x1" || b.Decoded[4] != "3" {
		t.Errorf("block 0 = %+v", b)
	}
	if res.Blocks[1].ScaleCode != "0x5e" {
		t.Errorf("zero block scale = %s, want 0x5e", res.Blocks[1].ScaleCode)
	}

	out, errs, code = runCLI(t, "464 0x43e88000 inf -inf nan 0xb8d1b717", "quant", "--dtype", "fp8_e4m3fn", "--overflow", "satfinite", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	res = quantResult{}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	want := quantBlock{
		PayloadHex: "7e7e7efe7f80",
		Input:      []string{"464", "465", "inf", "-inf", "nan", "-9.99999975e-05"},
		Codes:      []string{"0x7e", "0x7e", "0x7e", "0xfe", "0x7f", "0x80"},
		Decoded:    []string{"448", "448", "448", "-448", "nan", "-0"},
	}
	if diff := cmp.Diff([]quantBlock{want}, res.Blocks); diff != "" {
		t.Errorf("fp8 satfinite (-want +got):\n%s", diff)
	}
}

func TestQuantCmdTableAndErrors(t *testing.T) {
	out, _, code := runCLI(t, "7 6.5 0.5 -0.5 1.5 -2.5 3.5 -6.5 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0", "quant", "--dtype", "int4_g32")
	if code != 0 || !strings.Contains(out, "scale 0x3c00") || !strings.Contains(out, "payload ef886a2c88") {
		t.Errorf("int4_g32 table (exit %d):\n%s", code, out)
	}
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		msg   string
	}{
		{"short block", "1 2 3", []string{"quant", "--dtype", "nvfp4"}, 2, "needs exactly 16"},
		{"bad value", "1 two", []string{"quant", "--dtype", "bf16"}, 2, `bad value "two"`},
		{"empty", "", []string{"quant", "--dtype", "bf16"}, 2, "no values"},
		{"unknown dtype", "1", []string{"quant", "--dtype", "fp7"}, 2, "unknown codec"},
		{"bad overflow", "1", []string{"quant", "--dtype", "fp8_e4m3", "--overflow", "wrap"}, 2, "overflow policy"},
		{"missing dtype", "1", []string{"quant"}, 2, "dtype"},
		{"unknown flag", "1", []string{"quant", "--format", "x"}, 2, "unknown flag"},
		{"too many args", "", []string{"plan", "a", "b"}, 2, "accepts at most 1 arg"},
		{"unknown command", "", []string{"plann"}, 2, "unknown command"},
		{"unknown help topic", "", []string{"help", "plann"}, 2, "Did you mean this?\n\tplan"},
		{"missing flag value", "", []string{"serve", "--addr"}, 2, "flag needs an argument: --addr"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, code := runCLI(t, tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.msg) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errs, tc.code, tc.msg)
			}
		})
	}
}

func TestQuantErrorSynthetic(t *testing.T) {
	out, errs, code := runCLI(t, "", "quant-error", "-o", "json", "--dtypes", "bf16,fp8_e4m3,nvfp4,int4_g32")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep quantErrorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Elements != synthTokens*synthHeads*synthHeadDim || len(rep.Rows) != 4 {
		t.Fatalf("report %+v", rep)
	}
	if r := rep.Rows[0]; r.SNRdB != nil || r.RMSE != 0 || r.Cosine != 1 {
		t.Errorf("bf16 on bf16 data should be lossless: %+v", r)
	}
	// more bits, less error: fp8 beats the 4-bit formats
	fp8, nv, i4 := rep.Rows[1], rep.Rows[2], rep.Rows[3]
	if !(*fp8.SNRdB > *nv.SNRdB && *fp8.SNRdB > *i4.SNRdB) || nv.BytesPerElement != 0.5625 {
		t.Errorf("unexpected ordering: %+v %+v %+v", fp8, nv, i4)
	}
}

func TestQuantErrorFiles(t *testing.T) {
	dir := t.TempDir()
	bf := synthKV(3)[:4096]
	raw := make([]byte, 2*len(bf))
	for i, b := range bf {
		raw[2*i], raw[2*i+1] = byte(b), byte(b>>8)
	}
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, []safetensors.TensorData{
		{Name: "k", DType: "BF16", Shape: []int64{32, 1, 128}, Data: raw},
		{Name: "ids", DType: "I8", Shape: []int64{4}, Data: make([]byte, 4)},
	}, nil); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "kv.safetensors")
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("kv.safetensors", buf.Bytes())
	out, errs, code := runCLI(t, "", "quant-error", "--input", good, "--dtypes", "fp8_e4m3,mxfp4")
	if code != 0 || !strings.Contains(out, "k BF16[32 1 128], 4096 elements") {
		t.Errorf("safetensors input: exit %d\n%s%s", code, out, errs)
	}
	x := make([]float32, len(bf))
	for i, b := range bf {
		x[i] = quant.BF16ToF32(b)
	}
	var nb bytes.Buffer
	if err := npy.Write(&nb, []int64{32, 128}, x); err != nil {
		t.Fatal(err)
	}
	npyPath := write("kv.npy", nb.Bytes())
	out2, errs, code := runCLI(t, "", "quant-error", "--input", npyPath, "--dtypes", "fp8_e4m3,mxfp4", "-o", "json")
	if code != 0 {
		t.Fatalf("npy input: exit %d: %s", code, errs)
	}
	var r1, r2 quantErrorReport
	_ = json.Unmarshal([]byte(out2), &r2)
	out1, _, _ := runCLI(t, "", "quant-error", "--input", good, "--dtypes", "fp8_e4m3,mxfp4", "-o", "json")
	_ = json.Unmarshal([]byte(out1), &r1)
	if diff := cmp.Diff(r1.Rows, r2.Rows); diff != "" || len(r1.Rows) != 2 {
		t.Errorf("same data via npy and safetensors differs:\n%s", diff)
	}

	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"truncated", []string{"--input", write("trunc.safetensors", buf.Bytes()[:buf.Len()-10])}, "does not match header"},
		{"header lies", []string{"--input", write("lies.safetensors", append([]byte{200, 0, 0, 0, 0, 0, 0, 0}, `{"k":{}}`...))}, "invalid header"},
		{"wrong dtype", []string{"--input", good, "--tensor", "ids"}, "has dtype I8"},
		{"missing tensor", []string{"--input", good, "--tensor", "v"}, "not found"},
		{"npy truncated", []string{"--input", write("t.npy", nb.Bytes()[:nb.Len()-3])}, "data truncated"},
		{"no file", []string{"--input", filepath.Join(dir, "none.npy")}, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, code := runCLI(t, "", append([]string{"quant-error"}, tc.args...)...)
			if code != 2 || !strings.Contains(errs, tc.msg) {
				t.Errorf("exit %d, stderr %q; want 2 (bad input) and %q", code, errs, tc.msg)
			}
		})
	}
}
