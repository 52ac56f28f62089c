package pool

import (
	"errors"
	"fmt"

	"github.com/kvcfg/kvcfg/dtype"
	"github.com/kvcfg/kvcfg/quant"
)

// Attention is the layout of a KV buffer.
type Attention string

// The layouts.
const (
	// MHA (also GQA, MQA): per layer a K buffer [rows, heads, head_dim] and
	// a V buffer [rows, heads, v_head_dim].
	MHA Attention = "mha"
	// MLA: per layer one latent buffer [rows, 1, kv_lora_rank +
	// qk_rope_head_dim]; the value is its first kv_lora_rank columns.
	MLA Attention = "mla"
)

// KVConfig configures a KV buffer.
type KVConfig struct {
	// Attention is mha or mla.
	Attention Attention `json:"attention"`
	// Format is the KV storage format name (dtype.LookupFormat: bf16,
	// fp8_e4m3, mxfp8, nvfp4, fp4_mx_block16, int8_g64, int4_g32, ...).
	Format string `json:"format"`
	// Size is the pool size in tokens; the buffer has Size + PageSize rows
	// (row block 0 is the padding page).
	Size int `json:"size"`
	// PageSize is the allocator's page size (0 means 1).
	PageSize int `json:"page_size"`
	// Layers is the number of layers the buffer holds; StartLayer is the
	// global id of the first (the PP stage's start layer).
	Layers     int `json:"layers"`
	StartLayer int `json:"start_layer,omitempty"`
	// Heads, HeadDim and VHeadDim are the per-rank KV heads and the K and V
	// head dims (MHA).
	Heads    int `json:"heads,omitempty"`
	HeadDim  int `json:"head_dim,omitempty"`
	VHeadDim int `json:"v_head_dim,omitempty"`
	// KVLoraRank and QKRopeHeadDim are the latent dims (MLA).
	KVLoraRank    int `json:"kv_lora_rank,omitempty"`
	QKRopeHeadDim int `json:"qk_rope_head_dim,omitempty"`
	// KCodec and VCodec quantize K and V (per-tensor k/v scales live in the
	// codec: quant.FP8 with a scale). nil means quant.ForKV(Format). MLA uses
	// KCodec only. Per-layer codecs can be set later with SetCodecs.
	KCodec quant.Codec `json:"-"`
	VCodec quant.Codec `json:"-"`
}

func (c KVConfig) page() int { return max(c.PageSize, 1) }

// Validate reports every problem with the config.
func (c KVConfig) Validate() error {
	var errs []error
	f, err := dtype.LookupFormat(c.Format)
	if err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrConfig, err))
	}
	if c.Size < 0 || c.PageSize < 0 || c.Layers < 0 || c.StartLayer < 0 {
		errs = append(errs, fmt.Errorf("%w: kv size %d, page %d, layers %d, start layer %d", ErrConfig, c.Size, c.PageSize, c.Layers, c.StartLayer))
	}
	check := func(what string, n int) {
		if n <= 0 {
			errs = append(errs, fmt.Errorf("%w: %s row of %d elements", ErrConfig, what, n))
			return
		}
		if err == nil && f.BlockSize > 0 && n%f.BlockSize != 0 {
			errs = append(errs, fmt.Errorf("%w: %s row of %d elements is not a whole number of %s blocks of %d", ErrConfig, what, n, f.Name, f.BlockSize))
		}
		if err == nil && f.ElementBits < 8 && n%2 != 0 {
			errs = append(errs, fmt.Errorf("%w: %s row of %d elements is odd for a 4-bit format", ErrConfig, what, n))
		}
	}
	switch c.Attention {
	case MHA:
		check("key", c.Heads*c.HeadDim)
		check("value", c.Heads*c.VHeadDim)
		if c.HeadDim <= 0 || c.VHeadDim <= 0 || c.Heads <= 0 {
			errs = append(errs, fmt.Errorf("%w: mha heads %d, head dims %d/%d", ErrConfig, c.Heads, c.HeadDim, c.VHeadDim))
		}
	case MLA:
		if c.KVLoraRank <= 0 || c.QKRopeHeadDim < 0 {
			errs = append(errs, fmt.Errorf("%w: mla dims %d+%d", ErrConfig, c.KVLoraRank, c.QKRopeHeadDim))
		} else {
			check("latent", c.KVLoraRank+c.QKRopeHeadDim)
		}
	default:
		errs = append(errs, fmt.Errorf("%w: attention %q (accepted: mha, mla)", ErrConfig, c.Attention))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	ke, ve := c.rowElems()
	if est := float64(c.Size+c.page()) * float64(c.Layers) * float64(ke+ve) * float64(f.ElementBits+16) / 8; est > maxHostBytes || c.Size > maxRows-c.page() {
		errs = append(errs, fmt.Errorf("%w: kv buffer of about %.0f bytes is too large for host memory", ErrConfig, est))
	}
	for _, cd := range []quant.Codec{c.KCodec, c.VCodec} {
		if cd != nil && !sameGeometry(cd.Format(), f) {
			errs = append(errs, fmt.Errorf("%w: codec format %s does not match kv format %s", ErrConfig, cd.Format().Name, f.Name))
		}
	}
	return errors.Join(errs...)
}

func sameGeometry(a, b dtype.Format) bool {
	return a.ElementBits == b.ElementBits && a.BlockSize == b.BlockSize && a.ScaleBytes == b.ScaleBytes
}

// fp4Workspace reports whether an MHA pool of format f carries SGLang's
// shared FP8 dequant workspace ([V3] float4_e2m1fn_x2 pools).
func fp4Workspace(f dtype.Format) bool { return f.Element == dtype.FP4E2M1x2 }

// rows returns the row elements of the key (or latent) and value planes.
func (c KVConfig) rowElems() (k, v int) {
	if c.Attention == MLA {
		return c.KVLoraRank + c.QKRopeHeadDim, 0
	}
	return c.Heads * c.HeadDim, c.Heads * c.VHeadDim
}

func (c KVConfig) bytes(f dtype.Format, size int) Bytes {
	m, l := int64(size+c.page()), int64(c.Layers)
	ke, ve := c.rowElems()
	b := Bytes{
		K: m * l * f.DataBytes(int64(ke)), KScales: m * l * f.ScaleBytesFor(int64(ke)),
		V: m * l * f.DataBytes(int64(ve)), VScales: m * l * f.ScaleBytesFor(int64(ve)),
	}
	if c.Attention == MHA && fp4Workspace(f) && c.Layers > 0 {
		b.Workspace = m * int64(c.Heads*c.HeadDim) * 2
	}
	return b
}

// plane is one [rows, elems] buffer: payload and block scales.
type plane struct {
	data, scales      []byte
	rowData, rowScale int
	elems             int
}

func newPlane(f dtype.Format, rows, elems int) plane {
	p := plane{elems: elems, rowData: int(f.DataBytes(int64(elems))), rowScale: int(f.ScaleBytesFor(int64(elems)))}
	p.data = make([]byte, rows*p.rowData)
	p.scales = make([]byte, rows*p.rowScale)
	return p
}

// KV holds the KV cache buffers of one pool (MHATokenToKVPool /
// MLATokenToKVPool and their FP4/MXFP8 variants) in host memory, and
// quantizes on write and dequantizes on read through quant codecs: the Go
// counterpart of set_kv_buffer and get_key_buffer/get_value_buffer.
//
// Concurrent SetKV/Get calls are safe when they touch disjoint rows;
// SetCodecs and Resize must not run concurrently with anything.
type KV struct {
	cfg       KVConfig
	f         dtype.Format
	rows      int // current rows (size + page)
	k, v      []plane
	kc, vc    []quant.Codec
	workspace []byte
}

// NewKV allocates the buffers cfg describes.
func NewKV(cfg KVConfig) (*KV, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f, _ := dtype.LookupFormat(cfg.Format)
	kv := &KV{cfg: cfg, f: f, rows: cfg.Size + cfg.page()}
	kc, vc := cfg.KCodec, cfg.VCodec
	if kc == nil || (vc == nil && cfg.Attention == MHA) {
		def, err := quant.ForKV(f.Name)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoCodec, err)
		}
		if kc == nil {
			kc = def
		}
		if vc == nil {
			vc = def
		}
	}
	ke, ve := cfg.rowElems()
	for range cfg.Layers {
		kv.k = append(kv.k, newPlane(f, kv.rows, ke))
		kv.kc = append(kv.kc, kc)
		if cfg.Attention == MHA {
			kv.v = append(kv.v, newPlane(f, kv.rows, ve))
			kv.vc = append(kv.vc, vc)
		}
	}
	if b := cfg.bytes(f, cfg.Size); b.Workspace > 0 {
		kv.workspace = make([]byte, b.Workspace)
	}
	return kv, nil
}

// Config returns the buffer's configuration.
func (kv *KV) Config() KVConfig { return kv.cfg }

// Format returns the storage format.
func (kv *KV) Format() dtype.Format { return kv.f }

// Rows is the number of rows per layer (size + page size).
func (kv *KV) Rows() int { return kv.rows }

// Bytes reports the buffers' memory by purpose, at the current size.
func (kv *KV) Bytes() Bytes { return kv.cfg.bytes(kv.f, kv.rows-kv.cfg.page()) }

// Workspace returns the FP4 dequant workspace (nil for other formats).
func (kv *KV) Workspace() []byte { return kv.workspace }

// SetCodecs replaces the codecs of one layer (global id), e.g. FP8 codecs
// carrying that layer's k_scale and v_scale. v is ignored for MLA.
func (kv *KV) SetCodecs(layer int, k, v quant.Codec) error {
	l, err := kv.local(layer)
	if err != nil {
		return err
	}
	if k == nil || !sameGeometry(k.Format(), kv.f) || (kv.cfg.Attention == MHA && (v == nil || !sameGeometry(v.Format(), kv.f))) {
		return fmt.Errorf("%w: codecs do not match kv format %s", ErrConfig, kv.f.Name)
	}
	kv.kc[l] = k
	if kv.cfg.Attention == MHA {
		kv.vc[l] = v
	}
	return nil
}

// Resize changes the size in tokens (at most the built size): the buffers
// are resliced to size + page rows, as the post-capture resize does.
func (kv *KV) Resize(size int) error {
	if size < 0 || size > kv.cfg.Size {
		return fmt.Errorf("%w: kv resize to %d tokens (built with %d)", ErrConfig, size, kv.cfg.Size)
	}
	kv.rows = size + kv.cfg.page()
	for i := range kv.k {
		kv.k[i] = kv.k[i].reslice(kv.rows)
	}
	for i := range kv.v {
		kv.v[i] = kv.v[i].reslice(kv.rows)
	}
	if kv.workspace != nil {
		kv.workspace = kv.workspace[:int64(kv.rows)*int64(kv.cfg.Heads*kv.cfg.HeadDim)*2]
	}
	return nil
}

func (p plane) reslice(rows int) plane {
	p.data = p.data[:rows*p.rowData]
	p.scales = p.scales[:rows*p.rowScale]
	return p
}

func (kv *KV) local(layer int) (int, error) {
	l := layer - kv.cfg.StartLayer
	if l < 0 || l >= kv.cfg.Layers {
		return 0, fmt.Errorf("%w: layer %d not in this pool (layers %d..%d)", ErrInvalid, layer, kv.cfg.StartLayer, kv.cfg.StartLayer+kv.cfg.Layers-1)
	}
	return l, nil
}

func (kv *KV) checkLocs(locs []int32) error {
	for _, l := range locs {
		if l < 0 || int(l) >= kv.rows {
			return fmt.Errorf("%w: row %d outside the kv buffer (%d rows)", ErrBadLocation, l, kv.rows)
		}
	}
	return nil
}

// runs calls fn for each maximal run of consecutive rows in locs: the run
// starts at locs[i] and covers n rows.
func runs(locs []int32, fn func(i, n int) error) error {
	for i := 0; i < len(locs); {
		n := 1
		for i+n < len(locs) && locs[i+n] == locs[i]+int32(n) {
			n++
		}
		if err := fn(i, n); err != nil {
			return err
		}
		i += n
	}
	return nil
}

type elem interface{ ~float32 | ~uint16 }

func encode[T elem](c quant.Codec, dst, scales []byte, src []T) error {
	switch s := any(src).(type) {
	case []float32:
		return c.EncodeF32(dst, scales, s)
	case []uint16:
		return c.EncodeBF16(dst, scales, s)
	}
	return nil
}

func decode[T elem](c quant.Codec, dst []T, src, scales []byte) error {
	switch d := any(dst).(type) {
	case []float32:
		return c.DecodeF32(d, src, scales)
	case []uint16:
		return c.DecodeBF16(d, src, scales)
	}
	return nil
}

func write[T elem](p *plane, c quant.Codec, locs []int32, src []T) error {
	if len(src) != len(locs)*p.elems {
		return fmt.Errorf("%w: %d values for %d rows of %d", ErrInvalid, len(src), len(locs), p.elems)
	}
	if s, ok := any(src).([]float32); ok {
		// one checked call for every row (runs of rows become one span)
		return quant.EncodeRowsF32(c, p.data, p.scales, s, p.elems, locs)
	}
	return runs(locs, func(i, n int) error {
		r := int(locs[i])
		return encode(c, p.data[r*p.rowData:(r+n)*p.rowData], p.scales[r*p.rowScale:(r+n)*p.rowScale], src[i*p.elems:(i+n)*p.elems])
	})
}

// read decodes the first cols elements of each row (cols == p.elems: whole rows).
func read[T elem](p *plane, c quant.Codec, f dtype.Format, locs []int32, dst []T, cols int) error {
	if len(dst) != len(locs)*cols {
		return fmt.Errorf("%w: destination of %d values for %d rows of %d", ErrInvalid, len(dst), len(locs), cols)
	}
	if d, ok := any(dst).([]float32); ok && cols == p.elems {
		return quant.DecodeRowsF32(c, d, p.data, p.scales, cols, locs)
	}
	if cols == p.elems {
		return runs(locs, func(i, n int) error {
			r := int(locs[i])
			return decode(c, dst[i*cols:(i+n)*cols], p.data[r*p.rowData:(r+n)*p.rowData], p.scales[r*p.rowScale:(r+n)*p.rowScale])
		})
	}
	db, sb := int(f.DataBytes(int64(cols))), int(f.ScaleBytesFor(int64(cols)))
	for i, l := range locs {
		r := int(l)
		if err := decode(c, dst[i*cols:(i+1)*cols], p.data[r*p.rowData:r*p.rowData+db], p.scales[r*p.rowScale:r*p.rowScale+sb]); err != nil {
			return err
		}
	}
	return nil
}

func setKV[T elem](kv *KV, layer int, locs []int32, k, v []T) error {
	l, err := kv.local(layer)
	if err != nil {
		return err
	}
	if err := kv.checkLocs(locs); err != nil {
		return err
	}
	if kv.cfg.Attention == MLA {
		if len(v) != 0 {
			return fmt.Errorf("%w: mla rows are written whole through k (nope|rope); v must be empty", ErrInvalid)
		}
		return write(&kv.k[l], kv.kc[l], locs, k)
	}
	if len(k) != len(locs)*kv.k[l].elems || len(v) != len(locs)*kv.v[l].elems {
		return fmt.Errorf("%w: %d/%d key/value values for %d rows of %d/%d", ErrInvalid, len(k), len(v), len(locs), kv.k[l].elems, kv.v[l].elems)
	}
	if err := write(&kv.k[l], kv.kc[l], locs, k); err != nil {
		return err
	}
	return write(&kv.v[l], kv.vc[l], locs, v)
}

func getKey[T elem](kv *KV, dst []T, layer int, locs []int32) error {
	l, err := kv.local(layer)
	if err != nil {
		return err
	}
	if err := kv.checkLocs(locs); err != nil {
		return err
	}
	return read(&kv.k[l], kv.kc[l], kv.f, locs, dst, kv.k[l].elems)
}

func getValue[T elem](kv *KV, dst []T, layer int, locs []int32) error {
	l, err := kv.local(layer)
	if err != nil {
		return err
	}
	if err := kv.checkLocs(locs); err != nil {
		return err
	}
	if kv.cfg.Attention == MLA {
		r := kv.cfg.KVLoraRank
		if (kv.f.BlockSize > 0 && r%kv.f.BlockSize != 0) || (kv.f.ElementBits < 8 && r%2 != 0) {
			return fmt.Errorf("%w: kv_lora_rank %d is not a whole number of %s blocks; read the key instead", ErrInvalid, r, kv.f.Name)
		}
		return read(&kv.k[l], kv.kc[l], kv.f, locs, dst, r)
	}
	return read(&kv.v[l], kv.vc[l], kv.f, locs, dst, kv.v[l].elems)
}

// SetKV quantizes and stores K and V rows of a layer (global id) at locs:
// k is [len(locs), heads, head_dim] and v [len(locs), heads, v_head_dim],
// row-major. For MLA, k holds whole latent rows [len(locs), kv_lora_rank +
// qk_rope_head_dim] (nope then rope) and v must be empty.
func (kv *KV) SetKV(layer int, locs []int32, k, v []float32) error {
	return setKV(kv, layer, locs, k, v)
}

// SetKVBF16 is SetKV for bf16 bit patterns.
func (kv *KV) SetKVBF16(layer int, locs []int32, k, v []uint16) error {
	return setKV(kv, layer, locs, k, v)
}

// GetKey dequantizes the K rows (MLA: whole latent rows) of a layer at locs
// into dst.
func (kv *KV) GetKey(dst []float32, layer int, locs []int32) error {
	return getKey(kv, dst, layer, locs)
}

// GetValue dequantizes the V rows (MLA: the first kv_lora_rank columns) of
// a layer at locs into dst.
func (kv *KV) GetValue(dst []float32, layer int, locs []int32) error {
	return getValue(kv, dst, layer, locs)
}

// GetKeyBF16 is GetKey into bf16 bit patterns.
func (kv *KV) GetKeyBF16(dst []uint16, layer int, locs []int32) error {
	return getKey(kv, dst, layer, locs)
}

// GetValueBF16 is GetValue into bf16 bit patterns.
func (kv *KV) GetValueBF16(dst []uint16, layer int, locs []int32) error {
	return getValue(kv, dst, layer, locs)
}

// KeyRaw returns the stored payload and scale bytes of one K (or latent)
// row, as views; for inspection and tests.
func (kv *KV) KeyRaw(layer int, loc int32) (data, scales []byte, err error) {
	l, err := kv.local(layer)
	if err != nil {
		return nil, nil, err
	}
	if err := kv.checkLocs([]int32{loc}); err != nil {
		return nil, nil, err
	}
	p := &kv.k[l]
	r := int(loc)
	return p.data[r*p.rowData : (r+1)*p.rowData], p.scales[r*p.rowScale : (r+1)*p.rowScale], nil
}
