package sizing

import (
	"errors"
	"math"
	"regexp"
	"testing"
)

// v4Pro is DeepSeek-V4-Pro's DSV4PoolConfigurator with SGLang's defaults:
// 61 layers (compress_ratios 128,128, then 4,128 alternating: 30 c4 and 31
// c128 layers), head_dim 512 = 448 NoPE + 64 RoPE, index_head_dim 128,
// sliding_window 128, SWA ratio 0.1, fp32 compress state.
func v4Pro() DSV4 {
	return DSV4{Layers: 61, C4Layers: 30, C128Layers: 31, QKNope: 448, QKRope: 64, IndexHeadDim: 128,
		Window: 128, SWARatio: 0.1, StateElem: 4, Shrink: 1, RequestedPerWorker: -1, ContextLen: 1048576, FloorPages: 3}
}

// v4Flash is DeepSeek-V4-Flash: 43 layers (0,0, then 4,128 alternating,
// ending on 4: 21 c4 and 20 c128 layers).
func v4Flash() DSV4 {
	d := v4Pro()
	d.Layers, d.C4Layers, d.C128Layers = 43, 21, 20
	return d
}

func TestDSV4RowBytes(t *testing.T) {
	d := v4Pro()
	// kv: 448 fp8 NoPE + 64·2 bf16 RoPE + 8 scale bytes.
	if got := d.KVBytes(); got != 584 {
		t.Errorf("kv bytes %d, want 584", got)
	}
	// indexer: 128 fp8 + 128/128·4 fp32 scale.
	if got := d.IndexerBytes(); got != 132 {
		t.Errorf("indexer bytes %d, want 132", got)
	}
	// c4 state: 2·2·512·4 (kv, score; overlap) + 2·2·128·4 (indexer state).
	if got := d.C4StateBytes(); got != 8192+2048 {
		t.Errorf("c4 state bytes %d, want 10240", got)
	}
	if got := d.C128StateRowBytes(); got != 4096 { // 2·512·4
		t.Errorf("c128 state row %d, want 4096", got)
	}
}

func TestDSV4BytesPerFullToken(t *testing.T) {
	tests := []struct {
		name string
		d    DSV4
		want float64
	}{
		// 0.1·584·61 = 3562.4; 584·30/4 = 4380; 584·31/128 = 141.4375;
		// 132·30/4 = 990; 0.1·(8/128)·8192·30 = 1536; 0.1·(8/128)·2048·30 = 384.
		{"V4-Pro", v4Pro(), 3562.4 + 4380 + 141.4375 + 990 + 1536 + 384},
		// 0.1·584·43 = 2511.2; 584·21/4 = 3066; 584·20/128 = 91.25;
		// 132·21/4 = 693; 0.1·(8/128)·8192·21 = 1075.2; ·2048·21 = 268.8.
		{"V4-Flash", v4Flash(), 2511.2 + 3066 + 91.25 + 693 + 1075.2 + 268.8},
		// bf16 state halves both state terms: 1536/2 + 384/2.
		{"V4-Pro bf16 state", func() DSV4 { d := v4Pro(); d.StateElem = 2; return d }(), 3562.4 + 4380 + 141.4375 + 990 + 768 + 192},
		// HiSparse ratio 2: c4 is 584·30/8 = 2190 (the indexer is not shrunk).
		{"V4-Pro HiSparse 2", func() DSV4 { d := v4Pro(); d.Shrink = 2; return d }(), 3562.4 + 2190 + 141.4375 + 990 + 1536 + 384},
		// MTP: c4 ring 16 doubles the state terms, then ×(61+1)/61.
		{"V4-Pro MTP", func() DSV4 { d := v4Pro(); d.Speculative = true; return d }(), (3562.4 + 4380 + 141.4375 + 990 + 3072 + 768) * 62 / 61},
	}
	for _, tt := range tests {
		if got := tt.d.CellSize(); math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("%s: bytes_per_full_token %.4f, want %.4f", tt.name, got, tt.want)
		}
	}
}

// TestDSV4C128Fixed carries the vector: with SGLang's defaults and
// 256 running requests the fixed c128-state term of DeepSeek-V4-Pro is
// 3.92 GiB (7.83 GiB with MTP, whose ring doubles to 256).
func TestDSV4C128Fixed(t *testing.T) {
	d := v4Pro()
	// slots 257; rows 257·128 + 128 + 1 = 33,025 → 33,152 (259·128);
	// 33,152 · 2·512·4 B · 31 layers = 4,209,508,352 B.
	if got := d.C128StateFixedBytes(256); got != 4_209_508_352 {
		t.Errorf("c128 fixed %d, want 4,209,508,352", got)
	}
	if got := float64(d.C128StateFixedBytes(256)) / (1 << 30); math.Abs(got-3.92) > 0.005 {
		t.Errorf("c128 fixed %.4f GiB, want 3.92", got)
	}
	d.Speculative = true
	// rows 257·256 + 256 + 1 = 66,049 → 66,176 (517·128); · 4096 · 31 = 8,402,763,776 B.
	if got := d.C128StateFixedBytes(256); got != 8_402_763_776 {
		t.Errorf("MTP c128 fixed %d, want 8,402,763,776", got)
	}
	if got := float64(d.C128StateFixedBytes(256)) / (1 << 30); math.Abs(got-7.83) > 0.005 {
		t.Errorf("MTP c128 fixed %.4f GiB, want 7.83", got)
	}
	d.DecodeExtraSlots = 64 // PD decode: 256 + 64 + 1 slots
	if got, want := d.ReqSlots(256), 321; got != want {
		t.Errorf("PD decode slots %d, want %d", got, want)
	}
}

// TestDSV4SWAFloor carries SGLang's unit-test vector: window 128, c4 ring 8,
// shrink 1, full 4096, page 256: ratio 0.1 gives SWA 256 < 3 pages (768)
// and is refused naming the minimum ratio 0.1875; ratio 0.2 gives 768.
func TestDSV4SWAFloor(t *testing.T) {
	d := v4Pro()
	_, err := d.FromMaxTokens(4096, 256)
	if !errors.Is(err, ErrSWAFloor) {
		t.Fatalf("ratio 0.1: err %v, want ErrSWAFloor", err)
	}
	if !regexp.MustCompile(`DSV4 SWA pool \(256 tokens\).*minimum=768.*at least 0\.1875`).MatchString(err.Error()) {
		t.Errorf("error text %q", err)
	}
	d.SWARatio = 0.2
	cfg, err := d.FromMaxTokens(4096, 256)
	if err != nil {
		t.Fatal(err)
	}
	// swa = floor_page(int(4096·0.2) = 819) = 768; c4 = 4096//4; c128 = 4096//128;
	// c4_state = 768//128·8.
	want := DSV4Sizes{Full: 4096, SWA: 768, C4: 1024, C128: 32, C4State: 48}
	if *cfg.DSV4 != want || cfg.MaxTotalNumTokens != 4096 || cfg.SWAMaxTotalNumTokens != 768 {
		t.Errorf("sizes %+v, want %+v", *cfg.DSV4, want)
	}
	if cfg.Logs[0] != "DSV4 pool sizes: full=4096, swa=768, c4=1024, c128=32, c4_state=48, c128_state=0" {
		t.Errorf("log %q", cfg.Logs[0])
	}
	if got := d.Finalize(*cfg.DSV4, 255).C128State; got != 256*128 {
		t.Errorf("c128_state %d, want 32,768", got)
	}
	d.FloorPages = 0 // a version without the floor builds the 256-token pool
	d.SWARatio = 0.1
	if _, err := d.FromMaxTokens(4096, 256); err != nil {
		t.Errorf("no floor: %v", err)
	}
}

func TestDSV4FromBytes(t *testing.T) {
	d := v4Pro()
	d.RequestedPerWorker = 256
	const avail = 100 << 30 // 107,374,182,400 B
	cfg, err := d.FromBytes(avail, 256)
	if err != nil {
		t.Fatal(err)
	}
	// (107,374,182,400 − 4,209,508,352) / 10,993.8375 = 9,383,863.8… → page
	// floor 9,383,680; swa int(938,368.0) → 938,240; c4 2,345,920;
	// c128 73,310; c4_state 938,240//128·8 = 58,640.
	want := DSV4Sizes{Full: 9_383_680, SWA: 938_240, C4: 2_345_920, C128: 73_310, C4State: 58_640}
	if *cfg.DSV4 != want {
		t.Errorf("sizes %+v, want %+v", *cfg.DSV4, want)
	}
	wantLog := "DSV4 memory calculation: bytes_per_full_token=10993.84, available_bytes=100.00 GB, c128_state_fixed=3.92 GB, full_token=9383680"
	if cfg.Logs[0] != wantLog {
		t.Errorf("log\n%q\nwant\n%q", cfg.Logs[0], wantLog)
	}
	// Without --max-running-requests the fixed term assumes SGLang's
	// estimate: int(107,374,182,400/10,993.8375 / 1,048,576 · 512) = 4,768
	// → clamp 4,096 (≤ tokens//2).
	d.RequestedPerWorker = -1
	if got, want := d.FixedBytes(avail), d.C128StateFixedBytes(4096); got != want {
		t.Errorf("estimated fixed %d, want %d (4096 requests)", got, want)
	}
	if got := d.EstimatedRequests(1000); got != 500 {
		t.Errorf("tiny pool estimate %d, want 500 (tokens//2)", got)
	}
}

func TestDSV4PageRules(t *testing.T) {
	d := v4Flash()
	if _, err := d.FromBytes(1<<30, 64); !errors.Is(err, ErrDSV4) || err.Error() != "sizing: DeepSeek-V4 pool: page_size must be multiple of 128 for compressed attention" {
		t.Errorf("page 64: %v", err)
	}
	if _, err := d.FromMaxTokens(4096, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("page 0: %v", err)
	}
	// The fixed term can eat the whole budget: no tokens, no panic.
	d.RequestedPerWorker = 4096
	cfg, err := d.FromBytes(1<<30, 256)
	if err != nil || cfg.MaxTotalNumTokens != 0 {
		t.Errorf("1 GiB with 4096 requests: %+v, %v (want 0 tokens)", cfg, err)
	}
}

func TestDSV4Bytes(t *testing.T) {
	d := v4Flash()
	s := DSV4Sizes{Full: 4096, SWA: 768, C4: 1024, C128: 32, C4State: 48}
	b := d.Bytes(s, 255)
	want := DSV4Bytes{
		SWA:       768 * 584 * 43,
		C4:        1024 * 584 * 21,
		C128:      32 * 584 * 20,
		Indexer:   1024 * 132 * 21,
		C4State:   48 * 10240 * 21,
		C128State: d.C128StateFixedBytes(255), // (256·128+129 = 32,897 → 33,024)·4096·20
	}
	if b != want {
		t.Errorf("bytes %+v, want %+v", b, want)
	}
	if want.C128State != 33024*4096*20 {
		t.Errorf("c128 state %d", want.C128State)
	}
}
