package weights

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/model"
)

var layerRe = regexp.MustCompile(`(?:^|\.)(?:layers|h|blocks|block)\.(\d+)\.`)

// FromDir sums the weight bytes of the most loaded rank from the
// *.safetensors headers in dir (only headers are read). ok is false when
// dir holds no safetensors file.
//
// Sharding follows the engine: matrices are split over TP; 1-D tensors
// (norms, biases) are replicated; K/V projections are replicated when there
// are fewer KV heads than TP ranks (each rank keeps one head). Tensors of
// layers at or above Spec.NumLayers (MTP/NextN draft layers) are not part of
// the target model and are skipped. With PP, layer tensors go to their
// stage (remainder on the last stages), embeddings to the first stage and
// the LM head and final norm to the last.
func FromDir(dir string, s *model.Spec, l Layout) (int64, bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return 0, false, fmt.Errorf("weights: %w", err)
	}
	if len(files) == 0 {
		return 0, false, nil
	}
	sort.Strings(files)
	tp, pp := max(l.TP, 1), max(l.PP, 1)
	stageOf := stageMap(s, pp)
	stages := make([]float64, pp)
	for _, f := range files {
		hdr, err := readHeader(f)
		if err != nil {
			return 0, true, err
		}
		for _, t := range hdr.Tensors {
			st, skip := tensorStage(t.Name, s, stageOf, pp)
			if skip {
				continue
			}
			stages[st] += perRankBytes(t, s, tp)
		}
	}
	var m float64
	for _, b := range stages {
		m = max(m, b)
	}
	return int64(m), true, nil
}

func readHeader(path string) (*safetensors.Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	defer f.Close()
	h, err := safetensors.ReadHeader(f)
	if err != nil {
		return nil, fmt.Errorf("weights: %s: %w", filepath.Base(path), err)
	}
	return h, nil
}

func stageMap(s *model.Spec, pp int) []int {
	n := max(s.NumLayers, 0)
	out := make([]int, n)
	per, rem := n/pp, n%pp
	i := 0
	for st := range pp {
		c := per
		if st >= pp-rem {
			c++
		}
		for range c {
			if i < n {
				out[i] = st
				i++
			}
		}
	}
	return out
}

func tensorStage(name string, s *model.Spec, stageOf []int, pp int) (int, bool) {
	if m := layerRe.FindStringSubmatch(name); m != nil {
		idx, err := strconv.Atoi(m[1])
		if err != nil || idx >= len(stageOf) {
			return 0, true // draft (MTP) layer or out of range
		}
		return stageOf[idx], false
	}
	lower := strings.ToLower(name)
	if strings.Contains(lower, "lm_head") || strings.HasSuffix(lower, "model.norm.weight") || strings.HasSuffix(lower, "final_layernorm.weight") {
		return pp - 1, false
	}
	return 0, false
}

func perRankBytes(t safetensors.TensorInfo, s *model.Spec, tp int) float64 {
	b := float64(t.Bytes())
	if len(t.Shape) < 2 {
		return b
	}
	lower := strings.ToLower(t.Name)
	if (strings.Contains(lower, "k_proj") || strings.Contains(lower, "v_proj")) && s.NumKVHeads > 0 && s.NumKVHeads < tp {
		return b / float64(s.NumKVHeads)
	}
	return b / float64(tp)
}
