package quant

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/kvcfg/kvcfg/dtype"
)

// Options selects a codec variant in New. The zero value gives each format
// its KV reference behaviour.
type Options struct {
	// Overflow is the FP8 overflow policy of fp8_* formats (default NonSat,
	// as SGLang's plain pool write `.to(float8)` on PyTorch ≤ 2.11).
	Overflow Overflow `json:"overflow"`
	// Scale is the per-tensor scale: the k_scale / v_scale of fp8_e4m3 and
	// fp8_e5m2 (codes store x/Scale), or nvfp4's decode-direction global
	// scale. 0 means 1.
	Scale float32 `json:"scale,omitempty"`
	// Rule is the MX scale rule of mxfp8 / mxfp4; ScaleDefault means ceil
	// for mxfp8 (SGLang) and floor for mxfp4 (OCP).
	Rule ScaleRule `json:"rule,omitempty"`
}

// Validate reports every invalid field at once.
func (o Options) Validate() error {
	var errs []error
	if o.Overflow > SatFinite {
		errs = append(errs, fmt.Errorf("%w: overflow policy %d", ErrOption, o.Overflow))
	}
	if o.Scale != 0 && (!(o.Scale > 0) || math.IsInf(float64(o.Scale), 0)) {
		errs = append(errs, fmt.Errorf("%w: scale %v must be positive and finite", ErrOption, o.Scale))
	}
	if o.Rule > ScaleFloor {
		errs = append(errs, fmt.Errorf("%w: scale rule %d", ErrOption, o.Rule))
	}
	return errors.Join(errs...)
}

// elementFormats are the storage formats of the bare element codecs (no
// block scale); they are not KV cache dtypes, so dtype does not list them.
var elementFormats = map[string]dtype.Format{
	"fp8_e4m3fn":   {Name: "fp8_e4m3fn", Element: dtype.FP8E4M3FN, ElementBits: 8, Description: "FP8 E4M3FN element, no scale"},
	"fp8_e4m3fnuz": {Name: "fp8_e4m3fnuz", Element: dtype.FP8E4M3FNUZ, ElementBits: 8, Description: "FP8 E4M3FNUZ element, no scale"},
	"e8m0":         {Name: "e8m0", Element: dtype.E8M0, ElementBits: 8, Description: "E8M0 power-of-two element (float8_e8m0fnu)"},
	"fp4_e2m1":     {Name: "fp4_e2m1", Element: dtype.FP4E2M1x2, ElementBits: 4, Description: "FP4 E2M1 element, two per byte, no scale"},
}

// aliases maps the format names of the test vectors to a name and options.
var aliases = map[string]struct {
	name string
	rule ScaleRule
}{
	"mxfp8_sglang": {"mxfp8", ScaleCeil},
	"mxfp8_ocp":    {"mxfp8", ScaleFloor},
	"mxfp4_ocp":    {"mxfp4", ScaleFloor},
	"nvfp4_kv":     {"nvfp4", ScaleDefault},
	"bfloat16":     {"bf16", ScaleDefault},
	"float16":      {"fp16", ScaleDefault},
	"float32":      {"fp32", ScaleDefault},
}

// Names lists the names New accepts (KV dtypes, element formats, aliases),
// sorted.
func Names() []string {
	seen := map[string]bool{}
	for _, n := range dtype.FormatNames() {
		seen[n] = true
	}
	for n := range elementFormats {
		seen[n] = true
	}
	for n := range aliases {
		seen[n] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

type codecKey struct {
	name string
	o    Options
}

var cache sync.Map // codecKey → Codec

// ForKV returns the codec of a KV cache dtype / storage format name as
// dtype.LookupFormat spells it (bf16, fp16, fp32, fp8_e4m3, fp8_e5m2, mxfp8,
// nvfp4, fp4_mx_block16, mxfp4, int8_g64, int4_g32, int8ring_int4), with the
// reference's default options; its Format() equals dtype.LookupFormat(name).
// int8ring_int4 returns the int4_g32 row codec (the int8 ring is separate).
// Use FP8 for FNUZ or per-tensor scales and New for other variants.
func ForKV(name string) (Codec, error) {
	f, err := dtype.LookupFormat(name)
	if err != nil {
		return nil, fmt.Errorf("quant: %w", err)
	}
	return New(f.Name, Options{})
}

// New returns the codec of a KV format, an element format (fp8_e4m3fn,
// fp8_e4m3fnuz, fp8_e5m2, e8m0, fp4_e2m1, bf16, fp16) or a vector-file alias
// (mxfp8_sglang, mxfp8_ocp, mxfp4_ocp, nvfp4_kv) with the given options.
// Codecs are immutable and cached: two calls with equal arguments return the
// same value.
func New(name string, o Options) (Codec, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	k := strings.ToLower(strings.TrimSpace(name))
	if a, ok := aliases[k]; ok {
		k = a.name
		if o.Rule == ScaleDefault {
			o.Rule = a.rule
		}
	}
	key := codecKey{k, o}
	if c, ok := cache.Load(key); ok {
		return c.(Codec), nil
	}
	c, err := build(k, o)
	if err != nil {
		return nil, err
	}
	c2, _ := cache.LoadOrStore(key, c)
	return c2.(Codec), nil
}

func build(k string, o Options) (Codec, error) {
	if f, ok := elementFormats[k]; ok {
		switch k {
		case "fp8_e4m3fn":
			return newFP8(f, E4M3FN, o.Scale, o.Overflow)
		case "fp8_e4m3fnuz":
			return newFP8(f, E4M3FNUZ, o.Scale, o.Overflow)
		case "e8m0":
			return &e8m0Codec{f}, nil
		case "fp4_e2m1":
			return &e2m1Codec{f}, nil
		}
	}
	f, err := dtype.LookupFormat(k)
	if err != nil {
		return nil, fmt.Errorf("%w codec %q (accepted: %s)", ErrUnknown, k, strings.Join(Names(), ", "))
	}
	switch k {
	case "fp32":
		return &wideCodec{format: f}, nil
	case "bf16":
		return &wideCodec{format: f, f: BF16}, nil
	case "fp16":
		return &wideCodec{format: f, f: FP16}, nil
	case "fp8_e4m3":
		return newFP8(f, E4M3FN, o.Scale, o.Overflow)
	case "fp8_e5m2":
		return newFP8(f, E5M2, o.Scale, o.Overflow)
	case "fp4_mx_block16":
		return &pow2Codec{format: f, bs: 16, rule: ruleSGLangFP4, maxElem: 6, emax: 2, halfUp: true, sglangScale: true}, nil
	case "mxfp4":
		c := &pow2Codec{format: f, bs: 32, rule: ruleFloor, maxElem: 6, emax: 2}
		if o.Rule == ScaleCeil {
			c.rule = ruleCeil
		}
		return c, nil
	case "mxfp8":
		c := &pow2Codec{format: f, bs: 32, fp8: true, rule: ruleCeil, maxElem: 448, emax: 8, t: fp8TablesFor(E4M3FN, SatFinite)}
		if o.Rule == ScaleFloor {
			c.rule = ruleFloor
		}
		return c, nil
	case "nvfp4":
		g := o.Scale
		if g == 0 {
			g = 1
		}
		return newNVFP4(f, g), nil
	case "int8_g64":
		return &intCodec{format: f, g: 64, qmax: 127}, nil
	case "int4_g32", "int8ring_int4":
		return &intCodec{format: f, g: 32, qmax: 7, four: true}, nil
	}
	return nil, fmt.Errorf("%w codec %q (a storage format without a codec)", ErrUnknown, k)
}
