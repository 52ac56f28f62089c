package quant

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kvcfg/kvcfg/dtype"
)

// vector is one line of testdata/quant_vectors.jsonl (a copy of the spec's
// vectors; see docs/quant.md#test-vectors for the schema).
type vector struct {
	ID           string          `json:"id"`
	Format       string          `json:"format"`
	Semantics    string          `json:"semantics"`
	InputHex     json.RawMessage `json:"input_f32_hex"`
	ExpectedCode string          `json:"expected_code"`
	DecodedHex   string          `json:"decoded_f32_hex"`
	BlockSize    int             `json:"block_size"`
	ScaleCode    string          `json:"expected_scale_code"`
	ScaleFP16    string          `json:"expected_scale_fp16"`
	GlobalScale  string          `json:"global_scale"`
	PayloadHex   string          `json:"expected_payload_hex"`
	Decoded      json.RawMessage `json:"decoded"`
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	f, err := os.Open("testdata/quant_vectors.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vs []vector
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var v vector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(vs) < 100 {
		t.Fatalf("only %d vectors", len(vs))
	}
	return vs
}

func parseHex32(t *testing.T, s string) uint32 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(v)
}

// parseDec parses a %.9g decimal of the vectors file ("nan", "inf", "-0").
func parseDec(t *testing.T, s string) float32 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 32)
	if err != nil {
		t.Fatalf("decoded value %q: %v", s, err)
	}
	return float32(v)
}

var scalarFloats = map[string]Float{
	"fp8_e4m3fn": E4M3FN, "fp8_e5m2": E5M2, "fp8_e4m3fnuz": E4M3FNUZ,
	"fp4_e2m1": E2M1, "bf16": BF16, "fp16": FP16,
}

func TestVectors(t *testing.T) {
	counts := map[string]int{}
	for _, v := range loadVectors(t) {
		t.Run(v.ID, func(t *testing.T) {
			var single string
			if json.Unmarshal(v.InputHex, &single) == nil {
				testScalarVector(t, v, single)
			} else {
				testBlockVector(t, v)
			}
		})
		counts[v.Format]++
	}
	t.Logf("vectors per format: %v", counts)
}

func testScalarVector(t *testing.T, v vector, in string) {
	x := math.Float32frombits(parseHex32(t, in))
	want := parseHex32(t, v.ExpectedCode)
	ov := NonSat
	if strings.Contains(v.Semantics, "satfinite") {
		ov = SatFinite
	}
	var got uint32
	var dec float32
	if v.Format == "e8m0" {
		got = uint32(EncodeE8M0(x))
		dec = DecodeE8M0(uint8(want))
	} else {
		f, ok := scalarFloats[v.Format]
		if !ok {
			t.Fatalf("no scalar format %q", v.Format)
		}
		got = uint32(f.Encode(x, ov))
		dec = f.Decode(uint16(want))
	}
	if got != want {
		t.Errorf("encode(%#08x) = %#x, want %#x", math.Float32bits(x), got, want)
	}
	if d, w := math.Float32bits(dec), parseHex32(t, v.DecodedHex); d != w {
		t.Errorf("decode(%#x) = %#08x, want %#08x", want, d, w)
	}
	// The same through the Codec API (fp4_e2m1 padded to an even count).
	name := v.Format
	c, err := New(name, Options{Overflow: ov})
	if err != nil {
		t.Fatal(err)
	}
	src := []float32{x}
	if c.Format().ElementBits == 4 {
		src = append(src, 0)
	}
	f := c.Format()
	dst := make([]byte, f.DataBytes(int64(len(src))))
	if err := c.EncodeF32(dst, nil, src); err != nil {
		t.Fatal(err)
	}
	var code uint32
	switch f.ElementBits {
	case 4:
		code = uint32(dst[0] & 0xF)
	case 8:
		code = uint32(dst[0])
	case 16:
		code = uint32(get16(dst))
	}
	if code != want {
		t.Errorf("codec encode = %#x, want %#x", code, want)
	}
	out := make([]float32, len(src))
	if err := c.DecodeF32(out, dst, nil); err != nil {
		t.Fatal(err)
	}
	if d, w := math.Float32bits(out[0]), parseHex32(t, v.DecodedHex); d != w {
		t.Errorf("codec decode = %#08x, want %#08x", d, w)
	}
}

func testBlockVector(t *testing.T, v vector) {
	var inHex, decStr []string
	if err := json.Unmarshal(v.InputHex, &inHex); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(v.Decoded, &decStr); err != nil {
		t.Fatal(err)
	}
	src := make([]float32, len(inHex))
	bf := make([]uint16, len(inHex))
	isBF16 := true
	for i, h := range inHex {
		u := parseHex32(t, h)
		src[i] = math.Float32frombits(u)
		bf[i] = uint16(u >> 16)
		isBF16 = isBF16 && u&0xFFFF == 0
	}
	want := make([]uint32, len(decStr))
	for i, s := range decStr {
		want[i] = math.Float32bits(parseDec(t, s))
	}
	wantPayload := v.PayloadHex
	wantScale := v.ScaleCode
	if v.ScaleFP16 != "" {
		wantScale = v.ScaleFP16
	}

	switch v.Format {
	case "mxfp4_ggml":
		var qs [16]byte
		e := ggmlMXFP4Block(&qs, src)
		checkBlock(t, fmt.Sprintf("0x%02x", e), hex.EncodeToString(qs[:]), wantScale, wantPayload)
		out := make([]float32, 32)
		ggmlMXFP4Decode(out, &qs, e)
		checkDecoded(t, out, want)
		return
	case "q8_0_ggml":
		var qs [32]int8
		d := ggmlQ80Block(&qs, src)
		b := make([]byte, 32)
		out := make([]float32, 32)
		for i, q := range qs {
			b[i] = byte(q)
			out[i] = float32(q) * FP16ToF32(d)
		}
		checkBlock(t, fmt.Sprintf("0x%04x", d), hex.EncodeToString(b), wantScale, wantPayload)
		checkDecoded(t, out, want)
		return
	}

	var o Options
	if v.GlobalScale != "" {
		o.Scale = parseDec(t, v.GlobalScale)
	}
	c, err := New(v.Format, o)
	if err != nil {
		t.Fatal(err)
	}
	f := c.Format()
	if f.BlockSize != v.BlockSize {
		t.Fatalf("block size %d, vector says %d", f.BlockSize, v.BlockSize)
	}
	dst := make([]byte, f.DataBytes(int64(len(src))))
	scales := make([]byte, f.ScaleBytesFor(int64(len(src))))
	if err := c.EncodeF32(dst, scales, src); err != nil {
		t.Fatal(err)
	}
	checkBlock(t, scaleString(f.ScaleBytes, scales), hex.EncodeToString(dst), wantScale, wantPayload)
	if isBF16 {
		dst2 := make([]byte, len(dst))
		scales2 := make([]byte, len(scales))
		if err := c.EncodeBF16(dst2, scales2, bf); err != nil {
			t.Fatal(err)
		}
		checkBlock(t, scaleString(f.ScaleBytes, scales2), hex.EncodeToString(dst2), wantScale, wantPayload)
	}
	out := make([]float32, len(src))
	if err := c.DecodeF32(out, dst, scales); err != nil {
		t.Fatal(err)
	}
	outBF := make([]uint16, len(src))
	if err := c.DecodeBF16(outBF, dst, scales); err != nil {
		t.Fatal(err)
	}
	// The grouped-int references dequantize to bf16 (q·s in float32, then
	// RNE); DecodeF32 returns the float32 product before that rounding.
	wide := make([]float32, len(outBF))
	for i, b := range outBF {
		wide[i] = BF16ToF32(b)
	}
	checkDecoded(t, wide, want)
	if f.Scale != dtype.Float16 {
		checkDecoded(t, out, want)
	}
	for i := range out {
		if w := BF16FromF32(out[i]); outBF[i] != w {
			t.Errorf("DecodeBF16[%d] = %#04x, want bf16(%v) = %#04x", i, outBF[i], out[i], w)
		}
	}
}

func scaleString(scaleBytes int, scales []byte) string {
	if scaleBytes == 2 {
		return fmt.Sprintf("0x%04x", get16(scales))
	}
	return fmt.Sprintf("0x%02x", scales[0])
}

func checkBlock(t *testing.T, gotScale, gotPayload, wantScale, wantPayload string) {
	t.Helper()
	if gotScale != wantScale {
		t.Errorf("scale = %s, want %s", gotScale, wantScale)
	}
	if gotPayload != wantPayload {
		t.Errorf("payload = %s, want %s", gotPayload, wantPayload)
	}
}

func checkDecoded(t *testing.T, out []float32, want []uint32) {
	t.Helper()
	got := make([]uint32, len(out))
	for i, v := range out {
		got[i] = math.Float32bits(v)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded bits mismatch (-want +got):\n%s", diff)
	}
}
