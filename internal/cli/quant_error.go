package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kvcfg/kvcfg/format/npy"
	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/quant"
)

// defaultErrorDTypes are the KV formats quant-error compares by default.
var defaultErrorDTypes = []string{"bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "mxfp8", "int8_g64", "nvfp4", "fp4_mx_block16", "mxfp4", "int4_g32"}

// Synthetic KV tensor of quant-error: [synthTokens, synthHeads, synthHeadDim].
const (
	synthTokens  = 512
	synthHeads   = 8
	synthHeadDim = 128
)

// quantErrorReport is the JSON / YAML output of `kvcfg quant-error`.
type quantErrorReport struct {
	Source   string           `json:"source"`
	Elements int              `json:"elements"`
	Rows     []quantErrorStat `json:"rows"`
}

// quantErrorStat is the round-trip error of one format.
type quantErrorStat struct {
	DType           string   `json:"dtype"`
	BytesPerElement float64  `json:"bytes_per_element"`
	RMSE            float64  `json:"rmse"`
	MaxAbsError     float64  `json:"max_abs_error"`
	SNRdB           *float64 `json:"snr_db"` // null when lossless
	Cosine          float64  `json:"cosine"`
	NonFinite       int      `json:"nonfinite"`
}

// quantErrorLong is the help of kvcfg quant-error.
const quantErrorLong = `Quantizes a tensor with each KV cache format, dequantizes it, and prints
bytes per element (payload plus block scales), RMSE, max absolute error,
SNR in dB (10·log10(Σx²/Σ(x−x̂)²)) and cosine similarity.

--input takes a .safetensors file (with --tensor NAME unless it holds a single
float tensor) or a .npy array; BF16, F16, F32 and F64 tensors are accepted and
blocks run along the flattened tensor (the last dimension should be
head_dim). A trailing partial group of 64 elements is left out.

Without --input a synthetic KV tensor is used: shape [512 tokens, 8 heads,
128 head_dim], N(0, 1) rounded to bf16, channels 7 and 100 of every head
scaled by 20 (the outlier channels seen in K caches), and token 0 / head 0
all zeros (a zero block). --seed changes the draw.

Elements that decode to NaN or ±Inf (e.g. fp8_e4m3 values above 464, which
the non-saturating cast turns into NaN) are counted in "nonfinite" and left
out of the other columns.`

// quantErrorFlags are the flags of kvcfg quant-error.
type quantErrorFlags struct {
	input, tensor, dtypes, output string
	seed                          uint64
}

func newQuantErrorCmd() *cobra.Command {
	o := &quantErrorFlags{}
	cmd := &cobra.Command{
		Use:   "quant-error",
		Short: "Measure the round-trip error of each KV cache dtype on real or synthetic KV tensors",
		Long:  quantErrorLong,
		Example: `  kvcfg quant-error
  kvcfg quant-error --input kv.safetensors --tensor layers.0.k_cache --dtypes fp8_e4m3,nvfp4,fp4_mx_block16 -o json`,
		Args: cobra.NoArgs,
		RunE: o.run,
	}
	f := cmd.Flags()
	f.StringVar(&o.input, "input", "", "a .safetensors or .npy file holding a KV tensor (default: synthetic)")
	f.StringVar(&o.tensor, "tensor", "", "tensor name inside a .safetensors file")
	f.StringVar(&o.dtypes, "dtypes", "", "comma-separated formats to compare (default: "+strings.Join(defaultErrorDTypes, ",")+")")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the synthetic tensor")
	f.StringVarP(&o.output, "output", "o", outTable, "output format: table, markdown, json or yaml")
	return cmd
}

// run measures each format's round trip on the tensor and prints the
// report.
func (o *quantErrorFlags) run(cmd *cobra.Command, _ []string) error {
	if err := checkFormat(o.output, outTable, outJSON, outYAML, outMarkdown); err != nil {
		return &exitError{code: 2, err: err}
	}
	names, codecs, err := quantErrorCodecs(o.dtypes)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	x, bf, source, err := o.tensorValues(cmd.Context())
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	n := len(x) / 64 * 64
	if n == 0 {
		return &exitError{code: 2, err: fmt.Errorf("%s: %d elements; need at least 64", source, len(x))}
	}
	rep := quantErrorReport{Source: source, Elements: n}
	for i, c := range codecs {
		var in []uint16
		if bf != nil {
			in = bf[:n]
		}
		st, err := measure(cmd.Context(), quant.ParallelContext(cmd.Context(), c, 2), x[:n], in)
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		st.DType = names[i]
		rep.Rows = append(rep.Rows, st)
	}
	w := cmd.OutOrStdout()
	if ok, err := writeStructured(w, o.output, rep); ok {
		return err
	}
	return writeQuantErrorTable(w, o.output, &rep)
}

// quantErrorCodecs returns the formats --dtypes names (the defaults when
// empty) and their codecs: a KV cache dtype's, else the quant format's.
// The error lists every name that is neither.
func quantErrorCodecs(dtypes string) ([]string, []quant.Codec, error) {
	names := defaultErrorDTypes
	if dtypes != "" {
		names = nil
		for _, n := range strings.Split(dtypes, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	codecs := make([]quant.Codec, len(names))
	var errs []error
	for i, n := range names {
		c, err := quant.ForKV(n)
		if err != nil {
			c, err = quant.New(n, quant.Options{})
		}
		if err != nil {
			errs = append(errs, err)
		}
		codecs[i] = c
	}
	return names, codecs, errors.Join(errs...)
}

// tensorValues returns the tensor to measure as float32 values, with its
// bf16 bit patterns when it is bf16 (nil otherwise), and says where it
// comes from: --input, or the synthetic tensor drawn with --seed.
func (o *quantErrorFlags) tensorValues(ctx context.Context) (x []float32, bf []uint16, source string, err error) {
	if o.input == "" {
		bf = synthKV(o.seed)
		source = fmt.Sprintf("synthetic [%d, %d, %d] N(0,1) bf16, outlier channels 7 and 100 ×20, one zero block, seed %d", synthTokens, synthHeads, synthHeadDim, o.seed)
	} else if x, bf, source, err = loadKVTensor(ctx, o.input, o.tensor); err != nil {
		return nil, nil, "", err
	}
	if bf != nil {
		x = make([]float32, len(bf))
		for i, b := range bf {
			x[i] = quant.BF16ToF32(b)
		}
	}
	return x, bf, source, nil
}

// synthKV draws the documented synthetic KV tensor as bf16 bit patterns.
func synthKV(seed uint64) []uint16 {
	rng := rand.New(rand.NewPCG(seed, 0x6b76636667))
	out := make([]uint16, synthTokens*synthHeads*synthHeadDim)
	for t := range synthTokens {
		for h := range synthHeads {
			for d := range synthHeadDim {
				i := (t*synthHeads+h)*synthHeadDim + d
				v := rng.NormFloat64()
				if d == 7 || d == 100 {
					v *= 20
				}
				if t == 0 && h == 0 {
					v = 0
				}
				out[i] = quant.BF16FromF32(float32(v))
			}
		}
	}
	return out
}

// maxQuantErrorElements bounds the tensor quant-error measures (2^27
// elements: 512 MiB as float32, and as much again for each decoded copy).
const maxQuantErrorElements = 1 << 27

// tooManyElements is the error for a tensor over maxQuantErrorElements.
func tooManyElements(what string, n int64) error {
	return fmt.Errorf("%s has %d elements; quant-error measures at most %d (2^27): save a slice of it (a few layers or tokens)", what, n, maxQuantErrorElements)
}

// loadKVTensor reads a float tensor from a .safetensors or .npy file, a
// regular file (a named pipe or device is refused before it is read). BF16
// tensors come back as bit patterns (bf), others as float32 (x).
func loadKVTensor(ctx context.Context, path, name string) (x []float32, bf []uint16, source string, err error) {
	head := make([]byte, 6)
	fh, _, err := openInput("--input", path, false)
	if err != nil {
		return nil, nil, "", err
	}
	_, _ = io.ReadFull(fh, head)
	fh.Close()
	if string(head) == "\x93NUMPY" || strings.EqualFold(filepath.Ext(path), ".npy") {
		if name != "" {
			return nil, nil, "", fmt.Errorf("--tensor applies to .safetensors files, %s is a .npy array", path)
		}
		x, source, err := loadNPY(ctx, path)
		return x, nil, source, err
	}
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, nil, "", fmt.Errorf("--input: %w", err)
	}
	defer f.Close()
	if name == "" {
		var floats []string
		for _, t := range f.Tensors {
			if isFloatST(t.DType) {
				floats = append(floats, t.Name)
			}
		}
		if len(floats) != 1 {
			sort.Strings(floats)
			if len(floats) > 10 {
				floats = append(floats[:10], "...")
			}
			return nil, nil, "", fmt.Errorf("%s holds %d float tensors; choose one with --tensor (%s)", path, len(floats), strings.Join(floats, ", "))
		}
		name = floats[0]
	}
	if t, err := f.Tensor(name); err == nil && t.Elements() > maxQuantErrorElements {
		return nil, nil, "", tooManyElements(fmt.Sprintf("%s: tensor %q %v", path, name, t.Shape), t.Elements())
	}
	t, raw, err := f.ReadTensor(name)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%s: %w", path, err)
	}
	source = fmt.Sprintf("%s %s %s%v", path, name, t.DType, t.Shape)
	switch t.DType {
	case "BF16":
		bf = make([]uint16, len(raw)/2)
		for i := range bf {
			bf[i] = binary.LittleEndian.Uint16(raw[2*i:])
		}
		return nil, bf, source, nil
	case "F16":
		x = make([]float32, len(raw)/2)
		for i := range x {
			x[i] = quant.FP16ToF32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	case "F32":
		x = make([]float32, len(raw)/4)
		_ = binary.Read(bytes.NewReader(raw), binary.LittleEndian, x)
	case "F64":
		x = make([]float32, len(raw)/8)
		for i := range x {
			x[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:])))
		}
	default:
		return nil, nil, "", fmt.Errorf("%s: tensor %q has dtype %s; quant-error needs BF16, F16, F32 or F64", path, name, t.DType)
	}
	return x, nil, source, nil
}

// loadNPY reads the .npy array path as float32, stopping when ctx is done.
func loadNPY(ctx context.Context, path string) (x []float32, source string, err error) {
	f, _, err := openInput("--input", path, false)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	a, err := npy.ReadContext(ctx, f, maxQuantErrorElements)
	if errors.Is(err, npy.ErrTooLarge) {
		return nil, "", fmt.Errorf("%s: %w; quant-error measures at most %d elements (2^27): save a slice of it (a few layers or tokens)", path, err, maxQuantErrorElements)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return a.Data, fmt.Sprintf("%s %s%v", path, a.DType, a.Shape), nil
}

func isFloatST(d string) bool { return d == "BF16" || d == "F16" || d == "F32" || d == "F64" }

// measure round-trips x (or its bf16 patterns bf, when given) through c.
func measure(ctx context.Context, c quant.Codec, x []float32, bf []uint16) (quantErrorStat, error) {
	f := c.Format()
	n := len(x)
	p := make([]byte, f.DataBytes(int64(n)))
	s := make([]byte, f.ScaleBytesFor(int64(n)))
	var err error
	if bf != nil {
		err = c.EncodeBF16(p, s, bf)
	} else {
		err = c.EncodeF32(p, s, x)
	}
	if err != nil {
		return quantErrorStat{}, err
	}
	y := make([]float32, n)
	if err := c.DecodeF32(y, p, s); err != nil {
		return quantErrorStat{}, err
	}
	st := quantErrorStat{BytesPerElement: f.BytesPerElement()}
	var se, sx, sy, sxy float64
	m := 0
	for i := range x {
		if i&(1<<20-1) == 0 && ctx.Err() != nil {
			return quantErrorStat{}, ctx.Err()
		}
		xv, yv := float64(x[i]), float64(y[i])
		if math.IsNaN(yv) || math.IsInf(yv, 0) || math.IsNaN(xv) || math.IsInf(xv, 0) {
			st.NonFinite++
			continue
		}
		e := yv - xv
		se += e * e
		sx += xv * xv
		sy += yv * yv
		sxy += xv * yv
		st.MaxAbsError = max(st.MaxAbsError, math.Abs(e))
		m++
	}
	if m > 0 {
		st.RMSE = math.Sqrt(se / float64(m))
	}
	if se > 0 {
		v := 10 * math.Log10(sx/se)
		st.SNRdB = &v
	}
	if sx > 0 && sy > 0 {
		st.Cosine = sxy / math.Sqrt(sx*sy)
	} else if sx == 0 && sy == 0 {
		st.Cosine = 1
	}
	return st, nil
}

func writeQuantErrorTable(w io.Writer, format string, rep *quantErrorReport) error {
	snr := func(s quantErrorStat) string {
		if s.SNRdB == nil {
			return "inf"
		}
		return strconv.FormatFloat(*s.SNRdB, 'f', 2, 64)
	}
	cols := []string{"dtype", "bytes/elem", "rmse", "max_abs_err", "snr_db", "cosine", "nonfinite"}
	row := func(s quantErrorStat) []string {
		return []string{s.DType, strconv.FormatFloat(s.BytesPerElement, 'f', 4, 64),
			strconv.FormatFloat(s.RMSE, 'g', 4, 64), strconv.FormatFloat(s.MaxAbsError, 'g', 4, 64),
			snr(s), strconv.FormatFloat(s.Cosine, 'f', 6, 64), strconv.Itoa(s.NonFinite)}
	}
	if format == outMarkdown {
		fmt.Fprintf(w, "%s, %d elements\n\n| %s |\n|%s\n", rep.Source, rep.Elements, strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
		for _, s := range rep.Rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(row(s), " | "))
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "%s, %d elements\n", rep.Source, rep.Elements)
	fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	for _, s := range rep.Rows {
		fmt.Fprintln(tw, strings.Join(row(s), "\t")+"\t")
	}
	return tw.Flush()
}
