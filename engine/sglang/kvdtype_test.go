package sglang_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/engine/sglang"
)

// want is the part of a Resolution the decision table fixes.
type want struct {
	String, Override, Format string
	DType, Store             dtype.DType
	ElementSize              int
}

func got(r sglang.KVResolution) want {
	return want{String: r.String, Override: r.Override, Format: r.Format.Name, DType: r.DType, Store: r.Store, ElementSize: r.ElementSize}
}

func TestResolveDecisionTable(t *testing.T) {
	bf16 := dtype.BFloat16
	tests := []struct {
		name string
		req  sglang.KVRequest
		want want
	}{
		// docs/sglang.md#kv-dtype, CUDA column.
		{"auto model bf16", sglang.KVRequest{KVCacheDType: "auto", ModelDType: bf16},
			want{"auto", "", "bf16", dtype.BFloat16, dtype.BFloat16, 2}},
		{"empty is auto", sglang.KVRequest{ModelDType: dtype.Float16},
			want{"auto", "", "fp16", dtype.Float16, dtype.Float16, 2}},
		{"auto fp32 model", sglang.KVRequest{ModelDType: dtype.Float32},
			want{"auto", "", "fp32", dtype.Float32, dtype.Float32, 4}},
		{"auto FP8 checkpoint", sglang.KVRequest{KVCacheDType: "auto", ModelDType: bf16, KVCacheQuantAlgo: "FP8"},
			want{"fp8_e4m3", "fp8_e4m3", "fp8_e4m3", dtype.FP8E4M3FN, dtype.UInt8, 1}},
		{"auto fp8 checkpoint lower case", sglang.KVRequest{ModelDType: bf16, KVCacheQuantAlgo: "fp8"},
			want{"fp8_e4m3", "fp8_e4m3", "fp8_e4m3", dtype.FP8E4M3FN, dtype.UInt8, 1}},
		{"auto non-fp8 algo", sglang.KVRequest{ModelDType: bf16, KVCacheQuantAlgo: "NVFP4"},
			want{"auto", "", "bf16", dtype.BFloat16, dtype.BFloat16, 2}},
		{"fp8_e5m2", sglang.KVRequest{KVCacheDType: "fp8_e5m2", ModelDType: bf16},
			want{"fp8_e5m2", "", "fp8_e5m2", dtype.FP8E5M2, dtype.UInt8, 1}},
		{"fp8_e4m3", sglang.KVRequest{KVCacheDType: "fp8_e4m3", ModelDType: bf16},
			want{"fp8_e4m3", "", "fp8_e4m3", dtype.FP8E4M3FN, dtype.UInt8, 1}},
		{"mxfp8", sglang.KVRequest{KVCacheDType: "mxfp8", ModelDType: bf16},
			want{"mxfp8", "", "mxfp8", dtype.FP8E4M3FN, dtype.UInt8, 1}},
		{"bf16", sglang.KVRequest{KVCacheDType: "bf16", ModelDType: dtype.Float16},
			want{"bf16", "", "bf16", dtype.BFloat16, dtype.BFloat16, 2}},
		{"bfloat16", sglang.KVRequest{KVCacheDType: "bfloat16", ModelDType: dtype.Float16},
			want{"bfloat16", "", "bf16", dtype.BFloat16, dtype.BFloat16, 2}},
		{"fp16", sglang.KVRequest{KVCacheDType: "fp16", ModelDType: bf16},
			want{"fp16", "", "fp16", dtype.Float16, dtype.Float16, 2}},
		{"nvfp4", sglang.KVRequest{KVCacheDType: "nvfp4", ModelDType: bf16},
			want{"nvfp4", "", "nvfp4", dtype.FP4E2M1x2, dtype.UInt8, 1}},
		{"fp4_mx_block16", sglang.KVRequest{KVCacheDType: "FP4_MX_BLOCK16", ModelDType: bf16},
			want{"fp4_mx_block16", "", "fp4_mx_block16", dtype.FP4E2M1x2, dtype.UInt8, 1}},
		{"int8_g64", sglang.KVRequest{KVCacheDType: "int8_g64", ModelDType: bf16},
			want{"int8_g64", "", "int8_g64", dtype.Int8, dtype.Int8, 1}},
		{"int4_g32", sglang.KVRequest{KVCacheDType: "int4_g32", ModelDType: bf16},
			want{"int4_g32", "", "int4_g32", dtype.UInt8, dtype.UInt8, 1}},
		{"int8ring_int4", sglang.KVRequest{KVCacheDType: "int8ring_int4", ModelDType: bf16},
			want{"int8ring_int4", "", "int8ring_int4", dtype.UInt8, dtype.UInt8, 1}},
		// HIP column: both fp8 strings map to the platform fp8 type.
		{"hip fnuz e4m3", sglang.KVRequest{KVCacheDType: "fp8_e4m3", ModelDType: bf16, Platform: sglang.HIP, FNUZ: true},
			want{"fp8_e4m3", "", "fp8_e4m3", dtype.FP8E4M3FNUZ, dtype.UInt8, 1}},
		{"hip fnuz e5m2 is not e5m2", sglang.KVRequest{KVCacheDType: "fp8_e5m2", ModelDType: bf16, Platform: sglang.HIP, FNUZ: true},
			want{"fp8_e5m2", "", "fp8_e4m3", dtype.FP8E4M3FNUZ, dtype.UInt8, 1}},
		{"hip ocp e5m2", sglang.KVRequest{KVCacheDType: "fp8_e5m2", ModelDType: bf16, Platform: sglang.HIP},
			want{"fp8_e5m2", "", "fp8_e4m3", dtype.FP8E4M3FN, dtype.UInt8, 1}},
		{"hip auto fp8 checkpoint", sglang.KVRequest{ModelDType: bf16, KVCacheQuantAlgo: "FP8", Platform: sglang.HIP, FNUZ: true},
			want{"fp8_e4m3", "fp8_e4m3", "fp8_e4m3", dtype.FP8E4M3FNUZ, dtype.UInt8, 1}},
		{"hip bf16", sglang.KVRequest{KVCacheDType: "bf16", ModelDType: bf16, Platform: sglang.HIP, FNUZ: true},
			want{"bf16", "", "bf16", dtype.BFloat16, dtype.BFloat16, 2}},
		// Draft override (docs/sglang.md#kv-dtype step 0).
		{"draft override fp8", sglang.KVRequest{KVCacheDType: "bf16", ModelDType: bf16, IsDraftWorker: true, DraftKVCacheDType: "fp8_e5m2"},
			want{"fp8_e5m2", "fp8_e5m2", "fp8_e5m2", dtype.FP8E5M2, dtype.UInt8, 1}},
		{"draft override auto follows checkpoint", sglang.KVRequest{KVCacheDType: "bf16", ModelDType: bf16, IsDraftWorker: true, DraftKVCacheDType: "auto", KVCacheQuantAlgo: "FP8"},
			want{"fp8_e4m3", "fp8_e4m3", "fp8_e4m3", dtype.FP8E4M3FN, dtype.UInt8, 1}},
		{"draft override ignored on target", sglang.KVRequest{KVCacheDType: "bf16", ModelDType: bf16, DraftKVCacheDType: "fp8_e5m2"},
			want{"bf16", "", "bf16", dtype.BFloat16, dtype.BFloat16, 2}},
		// DFLASH draft (docs/sglang.md#kv-dtype-draft-workers).
		{"dflash fa4 draft reverts to model dtype", sglang.KVRequest{KVCacheDType: "fp8_e4m3", ModelDType: bf16, IsDraftWorker: true, SpeculativeAlgorithm: "DFLASH", DraftAttentionBackend: "fa4"},
			want{"auto", "auto", "bf16", dtype.BFloat16, dtype.BFloat16, 2}},
		{"dflash fa4 same dtype untouched", sglang.KVRequest{KVCacheDType: "bf16", ModelDType: bf16, IsDraftWorker: true, SpeculativeAlgorithm: "DFLASH", DraftAttentionBackend: "fa4"},
			want{"bf16", "", "bf16", dtype.BFloat16, dtype.BFloat16, 2}},
		{"dflash fp4 target drafts in fp8", sglang.KVRequest{KVCacheDType: "nvfp4", ModelDType: bf16, IsDraftWorker: true, SpeculativeAlgorithm: "DFLASH", DraftAttentionBackend: "triton"},
			want{"fp8_e4m3", "fp8_e4m3", "fp8_e4m3", dtype.FP8E4M3FN, dtype.UInt8, 1}},
		{"dflash target worker untouched", sglang.KVRequest{KVCacheDType: "fp8_e4m3", ModelDType: bf16, SpeculativeAlgorithm: "DFLASH", DraftAttentionBackend: "fa4"},
			want{"fp8_e4m3", "", "fp8_e4m3", dtype.FP8E4M3FN, dtype.UInt8, 1}},
		{"eagle draft fa4 untouched", sglang.KVRequest{KVCacheDType: "fp8_e4m3", ModelDType: bf16, IsDraftWorker: true, SpeculativeAlgorithm: "EAGLE", DraftAttentionBackend: "fa4"},
			want{"fp8_e4m3", "", "fp8_e4m3", dtype.FP8E4M3FN, dtype.UInt8, 1}},
		// Defect (a): a fallback behaves as the auto branch it names.
		{"fp4 fallback runs auto with checkpoint fp8", sglang.KVRequest{KVCacheDType: "fp4_mx_block16", ModelDType: bf16, NoFP4Support: true, FallbackToAuto: true, KVCacheQuantAlgo: "FP8"},
			want{"fp8_e4m3", "fp8_e4m3", "fp8_e4m3", dtype.FP8E4M3FN, dtype.UInt8, 1}},
		{"fp4 fallback runs auto", sglang.KVRequest{KVCacheDType: "nvfp4", ModelDType: bf16, NoFP4Support: true, FallbackToAuto: true},
			want{"auto", "auto", "bf16", dtype.BFloat16, dtype.BFloat16, 2}},
		{"nvfp4 on hip falls back", sglang.KVRequest{KVCacheDType: "nvfp4", ModelDType: bf16, Platform: sglang.HIP, FallbackToAuto: true},
			want{"auto", "auto", "bf16", dtype.BFloat16, dtype.BFloat16, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := sglang.ResolveKV(tt.req)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if diff := cmp.Diff(tt.want, got(r)); diff != "" {
				t.Errorf("Resolve mismatch (-want +got):\n%s", diff)
			}
			if r.Format.Element != r.DType {
				t.Errorf("Format.Element = %s, want the pool dtype %s", r.Format.Element, r.DType)
			}
		})
	}
}

func TestResolveLogsAndWarnings(t *testing.T) {
	r, err := sglang.ResolveKV(sglang.KVRequest{KVCacheDType: "nvfp4", ModelDType: dtype.BFloat16})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"NVFP4 KV Cache might lead to an accuracy drop!"}, r.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	r, err = sglang.ResolveKV(sglang.KVRequest{KVCacheDType: "fp8_e4m3", ModelDType: dtype.BFloat16, IsDraftWorker: true, SpeculativeAlgorithm: "DFLASH", DraftAttentionBackend: "fa4"})
	if err != nil {
		t.Fatal(err)
	}
	wantLog := "DFLASH fa4 draft: overriding KV cache dtype torch.float8_e4m3fn -> torch.bfloat16 (fa4 needs K.dtype == Q.dtype; cannot read the target's quantized KV)."
	if len(r.Logs) == 0 || r.Logs[0] != wantLog {
		t.Errorf("logs = %q, want first %q", r.Logs, wantLog)
	}
	r, err = sglang.ResolveKV(sglang.KVRequest{KVCacheDType: "fp4_mx_block16", ModelDType: dtype.BFloat16, NoFP4Support: true, FallbackToAuto: true, KVCacheQuantAlgo: "FP8"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "falling back to 'auto', which resolved to fp8_e4m3") {
		t.Errorf("fallback warning = %q, want it to name the auto result", r.Warnings)
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name    string
		req     sglang.KVRequest
		is      error
		message string
	}{
		{"unknown", sglang.KVRequest{KVCacheDType: "fp7", ModelDType: dtype.BFloat16}, sglang.ErrUnsupportedKV, "Unsupported kv_cache_dtype: fp7. (accepted: auto, bf16"},
		{"deprecated fp4_e2m1", sglang.KVRequest{KVCacheDType: "fp4_e2m1", ModelDType: dtype.BFloat16}, sglang.ErrDeprecatedKV, "--kv-cache-dtype=fp4_e2m1 is deprecated. Use --kv-cache-dtype=fp4_mx_block16"},
		{"no fp4 support", sglang.KVRequest{KVCacheDType: "nvfp4", ModelDType: dtype.BFloat16, NoFP4Support: true}, sglang.ErrUnavailableKV, "--kv-cache-dtype=nvfp4 requires torch.float4_e2m1fn_x2 support. Please use PyTorch 2.8.0+ with CUDA 12.8+."},
		{"missing model dtype", sglang.KVRequest{KVCacheDType: "auto"}, sglang.ErrInvalidRequest, "model dtype is required"},
		{"model dtype fp8", sglang.KVRequest{ModelDType: dtype.FP8E4M3FN}, sglang.ErrInvalidRequest, "not a float16, bfloat16 or float32"},
		{"bad platform", sglang.KVRequest{ModelDType: dtype.BFloat16, Platform: "tpu"}, sglang.ErrInvalidRequest, `platform "tpu"`},
		{"fnuz on cuda", sglang.KVRequest{ModelDType: dtype.BFloat16, FNUZ: true}, sglang.ErrInvalidRequest, "fnuz"},
		{"draft unknown", sglang.KVRequest{ModelDType: dtype.BFloat16, IsDraftWorker: true, DraftKVCacheDType: "int3"}, sglang.ErrUnsupportedKV, "int3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sglang.ResolveKV(tt.req)
			if !errors.Is(err, tt.is) {
				t.Fatalf("err = %v, want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("err = %q, want it to contain %q", err, tt.message)
			}
			if !strings.HasPrefix(err.Error(), "sglang: ") {
				t.Errorf("err = %q, want the package prefix", err)
			}
		})
	}
	// Several problems are reported together.
	err := sglang.KVRequest{Platform: "tpu"}.Validate()
	if err == nil || !strings.Contains(err.Error(), "model dtype is required") || !strings.Contains(err.Error(), "tpu") {
		t.Errorf("Validate = %v, want both problems", err)
	}
}

// Defect (b): every dtype, valid or not, maps to a string without panicking.
func TestDTypeStringsAreTotal(t *testing.T) {
	for i := 0; i < 256; i++ {
		d := dtype.DType(i)
		if d.KVString() == "" || d.String() == "" || d.Torch() == "" {
			t.Errorf("DType(%d) has an empty name", i)
		}
	}
	for _, name := range sglang.AcceptedKVDTypes(sglang.Profile{}) {
		r, err := sglang.ResolveKV(sglang.KVRequest{KVCacheDType: name, ModelDType: dtype.BFloat16})
		if err != nil {
			t.Errorf("accepted %q: %v", name, err)
			continue
		}
		back := r.DType.KVString()
		if _, err := dtype.LookupFormat(back); err != nil && back != "e8m0" {
			t.Errorf("%q resolved to %s whose KVString %q is not a format", name, r.DType, back)
		}
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]dtype.DType{
		"torch.bfloat16": dtype.BFloat16, "half": dtype.Float16, "float": dtype.Float32,
		"BF16": dtype.BFloat16, "float8_e4m3fnuz": dtype.FP8E4M3FNUZ, "uint8": dtype.UInt8,
	} {
		if got, err := dtype.Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := dtype.Parse("float12"); !errors.Is(err, dtype.ErrUnknown) {
		t.Errorf("Parse(float12) err = %v, want ErrUnknown", err)
	}
}

func TestFormatGeometry(t *testing.T) {
	tests := []struct {
		name      string
		n         int64
		bytes     int64
		perElem   float64
		scaleByte int64
	}{
		{"bf16", 128, 256, 2, 0},
		{"fp8_e4m3", 128, 128, 1, 0},
		{"mxfp8", 128, 132, 1.03125, 4},
		{"nvfp4", 128, 72, 0.5625, 8},
		{"fp4_mx_block16", 128, 72, 0.5625, 8},
		{"mxfp4", 128, 68, 0.53125, 4},
		{"int8_g64", 128, 132, 1.03125, 4},
		{"int4_g32", 128, 72, 0.5625, 8},
	}
	for _, tt := range tests {
		f, err := dtype.LookupFormat(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if f.Bytes(tt.n) != tt.bytes || f.BytesPerElement() != tt.perElem || f.ScaleBytesFor(tt.n) != tt.scaleByte {
			t.Errorf("%s: Bytes=%d per=%g scales=%d; want %d %g %d", tt.name, f.Bytes(tt.n), f.BytesPerElement(), f.ScaleBytesFor(tt.n), tt.bytes, tt.perElem, tt.scaleByte)
		}
	}
	if _, err := dtype.LookupFormat("q8_0"); !errors.Is(err, dtype.ErrUnknown) {
		t.Errorf("LookupFormat(q8_0) err = %v, want ErrUnknown", err)
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range append(sglang.AcceptedKVDTypes(sglang.Profile{}), "fp4_e2m1", "", "FP8", "kvarn_x") {
		f.Add(s, "FP8", "hip", true, true, "DFLASH", "fa4", s, uint8(dtype.BFloat16))
	}
	f.Fuzz(func(t *testing.T, kv, algo, platform string, fnuz, draft bool, spec, backend, draftKV string, model uint8) {
		req := sglang.KVRequest{KVCacheDType: kv, KVCacheQuantAlgo: algo, Platform: sglang.Platform(platform), FNUZ: fnuz,
			IsDraftWorker: draft, SpeculativeAlgorithm: spec, DraftAttentionBackend: backend, DraftKVCacheDType: draftKV,
			ModelDType: dtype.DType(model)}
		r, err := sglang.ResolveKV(req)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "sglang: ") {
				t.Errorf("error without package prefix: %v", err)
			}
			return
		}
		if r.ElementSize <= 0 || r.Format.Name == "" || r.String == "" {
			t.Errorf("incomplete resolution %+v", r)
		}
	})
}
