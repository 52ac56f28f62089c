package model

import (
	"fmt"
	"sort"
	"strings"
)

// readQuant reads quantization_config (or the older compression_config).
func (p *parser) readQuant() {
	var qc object
	found := false
	for _, o := range []object{p.root, p.text} {
		for _, k := range []string{"quantization_config", "compression_config"} {
			if o.has(k) {
				qc, found = o.obj(k)
				break
			}
		}
		if found {
			break
		}
	}
	if !found {
		return
	}
	q := &QuantSpec{}
	q.Method, _ = qc.str("quant_method")
	// ModelOpt's hf_quant_config.json nests the algorithms under "quantization".
	inner := qc
	if o, ok := qc.obj("quantization"); ok {
		inner = o
	}
	algo, _ := inner.str("quant_algo")
	if v, ok := inner.str("kv_cache_quant_algo"); ok {
		q.KVCacheQuantAlgo = v
	}
	if q.Method == "" && algo != "" {
		q.Method = "modelopt"
	}
	if kv, ok := qc.obj("kv_cache_scheme"); ok && q.KVCacheQuantAlgo == "" {
		bits, _ := kv.int("num_bits")
		typ, _ := kv.str("type")
		switch {
		case bits == 8 && typ == "float":
			q.KVCacheQuantAlgo = "FP8"
		case bits == 8 && typ == "int":
			q.KVCacheQuantAlgo = "INT8"
		case bits == 4 && typ == "float":
			q.KVCacheQuantAlgo = "NVFP4"
		}
	}
	q.WeightBits = p.weightBits(qc, q.Method, algo)
	if q.WeightBits == 0 && q.Method != "" {
		p.s.Warnings = append(p.s.Warnings, fmt.Sprintf("quantization method %q: weight bits unknown", q.Method))
	}
	p.s.Quant = q
}

// weightBits returns the bits per quantized weight, 0 if unknown.
func (p *parser) weightBits(qc object, method, algo string) int {
	m := strings.ToLower(method)
	switch {
	case strings.Contains(m, "fp8") || m == "fbgemm_fp8" || m == "w8a8_fp8":
		return 8
	case m == "mxfp4" || m == "nvfp4" || m == "modelopt_fp4" || strings.Contains(m, "w4a16") || strings.Contains(m, "w4a8"):
		return 4
	case m == "awq" || m == "gptq" || strings.HasPrefix(m, "awq_") || strings.HasPrefix(m, "gptq_") || m == "marlin" || m == "hqq" || m == "quark":
		if b, ok := qc.int("bits"); ok {
			return b
		}
		if b, ok := qc.int("w_bit"); ok {
			return b
		}
		return 4
	case m == "bitsandbytes":
		if v, _ := qc.bool("load_in_4bit"); v {
			return 4
		}
		if v, _ := qc.bool("load_in_8bit"); v {
			return 8
		}
		return 4
	case m == "modelopt" || (m == "" && algo != ""):
		a := strings.ToUpper(algo)
		switch {
		case strings.Contains(a, "FP4") || strings.Contains(a, "W4"):
			return 4
		case strings.Contains(a, "FP8") || strings.Contains(a, "INT8") || strings.Contains(a, "W8"):
			return 8
		}
	case m == "compressed-tensors":
		return compressedTensorsBits(qc)
	}
	if b, ok := qc.int("bits"); ok {
		return b
	}
	return 0
}

// compressedTensorsBits reads config_groups.*.weights.num_bits (first group
// in name order), falling back to the format name.
func compressedTensorsBits(qc object) int {
	if groups, ok := qc.obj("config_groups"); ok {
		keys := make([]string, 0, len(groups.m))
		for k := range groups.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			g, ok := groups.obj(k)
			if !ok {
				continue
			}
			if w, ok := g.obj("weights"); ok {
				if b, ok := w.int("num_bits"); ok {
					return b
				}
			}
		}
	}
	f, _ := qc.str("format")
	switch {
	case strings.Contains(f, "fp4") || strings.Contains(f, "pack-quantized"):
		return 4
	case strings.Contains(f, "float-quantized") || strings.Contains(f, "int-quantized"):
		return 8
	}
	return 0
}

// quantSkipsAttention reports whether modules_to_not_convert (or ignore)
// leaves the attention projections unquantized (gpt-oss).
func (p *parser) quantSkipsAttention() bool {
	for _, o := range []object{p.root, p.text} {
		raw, _ := o.get("quantization_config")
		qc, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		for _, k := range []string{"modules_to_not_convert", "ignore", "ignored_layers"} {
			l, _ := qc[k].([]any)
			for _, v := range l {
				if s, ok := v.(string); ok && (strings.Contains(s, "self_attn") || strings.HasSuffix(s, ".attn") || strings.Contains(s, ".attention")) {
					return true
				}
			}
		}
		return false
	}
	return false
}
