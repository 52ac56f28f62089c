package cli

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/quant"
)

// quantResult is the JSON / YAML output of `kvcfg quant`.
type quantResult struct {
	DType  string       `json:"dtype"`
	Blocks []quantBlock `json:"blocks"`
}

// quantBlock is one encoded block: its scale code (absent for formats
// without block scales), payload bytes in memory order, and per element the
// code and decoded value.
type quantBlock struct {
	ScaleCode  string   `json:"scale_code,omitempty"`
	PayloadHex string   `json:"payload_hex"`
	Input      []string `json:"input"`
	Codes      []string `json:"codes"`
	Decoded    []string `json:"decoded"`
}

func newQuantCmd() *cobra.Command {
	var (
		name, overflow, rule, output string
		scale                        float32
	)
	cmd := &cobra.Command{
		Use:   "quant --dtype FORMAT",
		Short: "Encode float values from stdin with a KV codec and show codes, scales and payload bytes",
		Long: `Reads float values from stdin (decimal, nan, inf, -inf, or 0x float32 bit
patterns, separated by spaces, commas or newlines) and encodes them with
FORMAT: a KV cache dtype (bf16, fp16, fp8_e4m3, fp8_e5m2, mxfp8, nvfp4,
fp4_mx_block16, mxfp4, int8_g64, int4_g32) or an element format
(fp8_e4m3fn, fp8_e5m2, fp8_e4m3fnuz, e8m0, fp4_e2m1, bf16, fp16).

Block formats read one block per line (exactly the block size of values);
element formats encode all values as one block without a scale. For each
element the code (hex) and decoded value are printed, for each block the
scale code and the payload bytes in memory order.`,
		Example: `  echo "464 465 inf nan" | kvcfg quant --dtype fp8_e4m3fn --overflow satfinite
  seq -s' ' 1 16 | kvcfg quant --dtype fp4_mx_block16 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(output, outTable, outJSON, outYAML); err != nil {
				return &exitError{code: 2, err: err}
			}
			ov, err := quant.ParseOverflow(overflow)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			r, err := quant.ParseScaleRule(rule)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			c, err := quant.New(name, quant.Options{Overflow: ov, Scale: scale, Rule: r})
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			res, err := runQuant(c, name, cmd.InOrStdin())
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			w := cmd.OutOrStdout()
			if ok, err := writeStructured(w, output, res); ok {
				return err
			}
			return writeQuantTable(w, res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "dtype", "", "KV cache dtype or element format name (required)")
	f.StringVar(&overflow, "overflow", "nonsat", "FP8 overflow policy: nonsat (OCP, PyTorch <= 2.11) or satfinite (NVIDIA)")
	f.Float32Var(&scale, "scale", 0, "per-tensor scale: fp8 k/v scale (codes store x/scale) or nvfp4 decode-direction global scale (0 = 1)")
	f.StringVar(&rule, "rule", "", "MX scale rule for mxfp8/mxfp4: ceil (SGLang) or floor (OCP); default per format")
	f.StringVarP(&output, "output", "o", outTable, "output format: table, json or yaml")
	_ = cmd.MarkFlagRequired("dtype")
	return cmd
}

// parseQuantValue reads a decimal, nan, inf or a 0x float32 bit pattern.
func parseQuantValue(s string) (float32, error) {
	l := strings.ToLower(s)
	if strings.HasPrefix(l, "0x") {
		u, err := strconv.ParseUint(l[2:], 16, 32)
		if err != nil {
			return 0, fmt.Errorf("bad float32 bit pattern %q", s)
		}
		return math.Float32frombits(uint32(u)), nil
	}
	v, err := strconv.ParseFloat(l, 32)
	if err != nil {
		// ParseFloat reports out-of-range values with ±Inf, which is what
		// a float32 cast does too.
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return float32(v), nil
		}
		return 0, fmt.Errorf("bad value %q (want a decimal, nan, inf or a 0x float32 bit pattern)", s)
	}
	return float32(v), nil
}

// Bounds of what kvcfg quant reads from standard input (`yes 0 | kvcfg
// quant` and /dev/zero end with an error, not with the memory).
const (
	maxQuantValues = 1 << 20
	maxQuantLine   = 16 << 20
)

// readQuantLines returns the values of each non-empty input line.
func readQuantLines(r io.Reader) ([][]float32, error) {
	var lines [][]float32
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxQuantLine)
	n, total := 0, 0
	for sc.Scan() {
		n++
		fields := strings.FieldsFunc(sc.Text(), func(r rune) bool {
			return r == ' ' || r == '\t' || r == ',' || r == ';'
		})
		if len(fields) == 0 {
			continue
		}
		if total += len(fields); total > maxQuantValues {
			return nil, fmt.Errorf("standard input holds more than %d values, the most kvcfg quant reads (it prints every code): measure a whole tensor with kvcfg quant-error --input FILE", maxQuantValues)
		}
		vals := make([]float32, 0, len(fields))
		for _, f := range fields {
			v, err := parseQuantValue(f)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			vals = append(vals, v)
		}
		lines = append(lines, vals)
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return nil, fmt.Errorf("line %d is longer than %d MiB, the longest line read", n+1, maxQuantLine>>20)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("no values on stdin")
	}
	return lines, nil
}

func runQuant(c quant.Codec, name string, in io.Reader) (*quantResult, error) {
	lines, err := readQuantLines(in)
	if err != nil {
		return nil, err
	}
	f := c.Format()
	var blocks [][]float32
	if f.BlockSize > 0 {
		for i, l := range lines {
			if len(l) != f.BlockSize {
				return nil, fmt.Errorf("line %d has %d values; %s needs exactly %d per line (one block)", i+1, len(l), f.Name, f.BlockSize)
			}
		}
		blocks = lines
	} else {
		var all []float32
		for _, l := range lines {
			all = append(all, l...)
		}
		blocks = [][]float32{all}
	}
	res := &quantResult{DType: name}
	for _, blk := range blocks {
		b, err := quantOneBlock(c, blk)
		if err != nil {
			return nil, err
		}
		res.Blocks = append(res.Blocks, b)
	}
	return res, nil
}

func quantOneBlock(c quant.Codec, x []float32) (quantBlock, error) {
	f := c.Format()
	n := len(x)
	src := x
	if f.ElementBits == 4 && n%2 == 1 {
		src = append(append([]float32(nil), x...), 0) // pad the last nibble
	}
	payload := make([]byte, f.DataBytes(int64(len(src))))
	scales := make([]byte, f.ScaleBytesFor(int64(len(src))))
	if err := c.EncodeF32(payload, scales, src); err != nil {
		return quantBlock{}, err
	}
	dec := make([]float32, len(src))
	if err := c.DecodeF32(dec, payload, scales); err != nil {
		return quantBlock{}, err
	}
	b := quantBlock{PayloadHex: hex.EncodeToString(payload)}
	switch f.ScaleBytes {
	case 1:
		b.ScaleCode = fmt.Sprintf("0x%02x", scales[0])
	case 2:
		b.ScaleCode = fmt.Sprintf("0x%04x", uint16(scales[0])|uint16(scales[1])<<8)
	}
	for i := range n {
		b.Input = append(b.Input, fmtQuantFloat(x[i]))
		b.Codes = append(b.Codes, codeAt(f, payload, i))
		b.Decoded = append(b.Decoded, fmtQuantFloat(dec[i]))
	}
	return b, nil
}

// codeAt returns element i's code in hex, as stored.
func codeAt(f dtype.Format, p []byte, i int) string {
	switch f.ElementBits {
	case 4:
		return fmt.Sprintf("0x%x", p[i/2]>>(4*(i%2))&0xF)
	case 8:
		return fmt.Sprintf("0x%02x", p[i])
	case 16:
		return fmt.Sprintf("0x%04x", uint16(p[2*i])|uint16(p[2*i+1])<<8)
	}
	return fmt.Sprintf("0x%08x", uint32(p[4*i])|uint32(p[4*i+1])<<8|uint32(p[4*i+2])<<16|uint32(p[4*i+3])<<24)
}

// fmtQuantFloat formats like the vectors file: %.9g, "nan", "inf", "-0".
func fmtQuantFloat(v float32) string {
	switch {
	case v != v:
		return "nan"
	case math.IsInf(float64(v), 1):
		return "inf"
	case math.IsInf(float64(v), -1):
		return "-inf"
	case v == 0 && math.Signbit(float64(v)):
		return "-0"
	}
	return strconv.FormatFloat(float64(v), 'g', 9, 32)
}

func writeQuantTable(w io.Writer, res *quantResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "dtype: %s\n", res.DType)
	for bi, b := range res.Blocks {
		fmt.Fprintf(tw, "\nblock %d", bi)
		if b.ScaleCode != "" {
			fmt.Fprintf(tw, "  scale %s", b.ScaleCode)
		}
		fmt.Fprintf(tw, "  payload %s\n", b.PayloadHex)
		fmt.Fprintln(tw, "  #\tinput\tcode\tdecoded")
		for i := range b.Codes {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", i, b.Input[i], b.Codes[i], b.Decoded[i])
		}
	}
	return tw.Flush()
}
