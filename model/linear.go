package model

import (
	"fmt"
	"strings"

	"github.com/kvcfg/kvcfg/dtype"
)

// StateShapes returns the per-request state shapes of one linear-attention
// layer on one rank, as SGLang's Mamba2StateShape builds them (docs/sglang.md#mamba-state):
// the conv state shapes and the temporal (SSM) state shape. tp is the
// attention tensor-parallel size. A shape that does not split evenly over tp
// is an error wrapping ErrShape.
//
// Mamba2 and GDN: n_groups is raised to tp when it does not divide
// (replicated groups); conv (conv_dim/tp, kernel-1) with conv_dim =
// intermediate + 2*n_groups*state; temporal (heads/tp, head_dim, state).
// KDA (Kimi-Linear): proj = heads*head_dim; conv (kernel-1, proj/tp +
// 2*proj/tp); temporal (heads/tp, head_dim, head_dim). This is the one
// implementation: SGLang's and vLLM's sizing both call it.
func (l *LinearSpec) StateShapes(tp int) (conv [][]int, temporal []int, err error) {
	if l == nil {
		return nil, nil, fmt.Errorf("%w: no linear-attention spec", ErrRange)
	}
	if tp < 1 {
		return nil, nil, fmt.Errorf("%w: tensor-parallel size %d (must be at least 1)", ErrRange, tp)
	}
	if l.NumHeads < 1 || l.HeadDim < 1 || l.ConvKernel < 1 {
		return nil, nil, fmt.Errorf("%w: incomplete %s state description (heads=%d head_dim=%d conv_kernel=%d)", ErrRange, l.Kind, l.NumHeads, l.HeadDim, l.ConvKernel)
	}
	if l.NumHeads%tp != 0 {
		return nil, nil, fmt.Errorf("%w: %d linear-attention heads are not divisible by tp %d", ErrShape, l.NumHeads, tp)
	}
	switch l.Kind {
	case "kda":
		proj := l.NumHeads * l.HeadDim
		if proj%tp != 0 {
			return nil, nil, fmt.Errorf("%w: KDA projection %d not divisible by tp %d", ErrShape, proj, tp)
		}
		return [][]int{{l.ConvKernel - 1, proj/tp + 2*proj/tp}}, []int{l.NumHeads / tp, l.HeadDim, l.HeadDim}, nil
	case "mamba2", "gdn", "":
		if l.StateSize < 1 {
			return nil, nil, fmt.Errorf("%w: state size %d", ErrRange, l.StateSize)
		}
		g := max(l.NGroups, 1)
		if g%tp != 0 {
			g += tp - g
		}
		convDim := l.IntermediateSize + 2*g*l.StateSize
		if convDim%tp != 0 {
			return nil, nil, fmt.Errorf("%w: conv dim %d not divisible by tp %d", ErrShape, convDim, tp)
		}
		return [][]int{{convDim / tp, l.ConvKernel - 1}}, []int{l.NumHeads / tp, l.HeadDim, l.StateSize}, nil
	}
	return nil, nil, fmt.Errorf("%w: unknown state kind %q", ErrRange, l.Kind)
}

// SlotBytes returns the state bytes of one request slot over all the
// model's linear-attention layers on one rank: (Σ prod(conv)·convElem +
// prod(temporal)·ssmElem) · len(LayerIDs), element sizes in bytes.
func (l *LinearSpec) SlotBytes(tp, convElem, ssmElem int) (int64, error) {
	conv, temporal, err := l.StateShapes(tp)
	if err != nil {
		return 0, err
	}
	var approx float64
	for _, c := range conv {
		approx += float64(prod(c)) * float64(convElem)
	}
	approx += float64(prod(temporal)) * float64(ssmElem)
	approx *= float64(len(l.LayerIDs))
	if approx > 1<<62 || convElem < 0 || ssmElem < 0 {
		return 0, fmt.Errorf("%w: state of %g bytes per slot", ErrRange, approx)
	}
	var total int64
	for _, c := range conv {
		total += prod(c) * int64(convElem)
	}
	total += prod(temporal) * int64(ssmElem)
	return total * int64(len(l.LayerIDs)), nil
}

func prod(shape []int) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	return n
}

// SSMDType is the temporal state dtype before any engine override: the
// config's mamba_ssm_dtype when it names float32, bfloat16 or float16, else
// float32 (SGLang warns on other values and keeps float32).
func (l *LinearSpec) SSMDType() dtype.DType {
	switch strings.ToLower(strings.TrimPrefix(l.ConfigSSMDType, "torch.")) {
	case "bfloat16":
		return dtype.BFloat16
	case "float16":
		return dtype.Float16
	}
	return dtype.Float32
}
