package hub

import (
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/internal/inputfile"
)

// isCommit reports whether s is a full commit hash (catalog.IsCommit).
var isCommit = catalog.IsCommit

// isEtag reports whether s is a blob name of the cache: a git blob hash (40
// hex digits) or an LFS file's sha256 (64).
func isEtag(s string) bool { return (len(s) == 40 || len(s) == 64) && catalog.IsLowerHex(s) }

// repoDir is the HF cache folder of a model: models--ORG--NAME.
func (c *Client) repoDir(id string) string {
	if c.opt.CacheDir == "" {
		return ""
	}
	return filepath.Join(c.opt.CacheDir, "models--"+strings.ReplaceAll(id, "/", "--"))
}

// cachedCommit returns the commit rev names in the HF cache: rev itself
// when it is a commit, else the trimmed refs/<rev>; "" when unknown
// (never "the newest snapshot").
func (c *Client) cachedCommit(id, rev string) string {
	if isCommit(rev) {
		return rev
	}
	repo := c.repoDir(id)
	if repo == "" {
		return ""
	}
	b, err := inputfile.ReadFile(filepath.Join(repo, "refs", filepath.FromSlash(rev)), maxRefBytes, "an HF-cache ref")
	if err != nil {
		return ""
	}
	if s := strings.TrimSpace(string(b)); isCommit(s) {
		return s
	}
	return ""
}

// cachedFile reads snapshots/<commit>/<file>. absent is true when
// .no_exist/<commit>/<file> marks it as known to be missing.
func (c *Client) cachedFile(id, commit, file string) (data []byte, absent bool, ok bool) {
	repo := c.repoDir(id)
	if repo == "" {
		return nil, false, false
	}
	if _, err := os.Stat(filepath.Join(repo, ".no_exist", commit, filepath.FromSlash(file))); err == nil {
		return nil, true, true
	}
	b, err := inputfile.ReadFile(filepath.Join(repo, "snapshots", commit, filepath.FromSlash(file)), maxSmallFile, "an HF-cache file")
	if err != nil {
		return nil, false, false
	}
	return b, false, true
}

// storeFile writes a small file into the HF cache as huggingface_hub
// does: blobs/<etag> through a temporary file and a rename, a relative
// symlink snapshots/<commit>/<file> (a copy where links fail), and
// refs/<rev> when rev is not the commit. Every write is best effort: a
// read-only cache is normal.
func (c *Client) storeFile(id, rev, commit, file, etag string, body []byte) {
	repo := c.repoDir(id)
	if repo == "" || !isCommit(commit) {
		return
	}
	if !isEtag(etag) {
		etag = gitBlobSHA1(body)
	}
	blobs := filepath.Join(repo, "blobs")
	blob := filepath.Join(blobs, etag)
	if _, err := os.Stat(blob); err != nil {
		if err := writeAtomic(blob, body); err != nil {
			return
		}
	}
	snap := filepath.Join(repo, "snapshots", commit, filepath.FromSlash(file))
	if err := os.MkdirAll(filepath.Dir(snap), 0o755); err != nil {
		return
	}
	if _, err := os.Lstat(snap); err != nil {
		rel, err := filepath.Rel(filepath.Dir(snap), blob)
		if err != nil || os.Symlink(rel, snap) != nil {
			_ = writeAtomic(snap, body)
		}
	}
	c.storeRef(id, rev, commit)
}

// storeRef writes refs/<rev> = commit (no newline) when it changed.
func (c *Client) storeRef(id, rev, commit string) {
	repo := c.repoDir(id)
	if repo == "" || rev == commit || !isCommit(commit) {
		return
	}
	ref := filepath.Join(repo, "refs", filepath.FromSlash(rev))
	if b, err := inputfile.ReadFile(ref, maxRefBytes, "an HF-cache ref"); err == nil && strings.TrimSpace(string(b)) == commit {
		return
	}
	_ = writeAtomic(ref, []byte(commit))
}

// storeAbsent writes the empty marker .no_exist/<commit>/<file>.
func (c *Client) storeAbsent(id, commit, file string) {
	repo := c.repoDir(id)
	if repo == "" || !isCommit(commit) {
		return
	}
	p := filepath.Join(repo, ".no_exist", commit, filepath.FromSlash(file))
	if os.MkdirAll(filepath.Dir(p), 0o755) == nil {
		if f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.Close()
		}
	}
}

// gitBlobSHA1 is git's object id of body: what the Hub's ETag of a git
// file is, for mirrors that send none.
func gitBlobSHA1(body []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(body))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

func writeAtomic(path string, body []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	tmp := path + "." + hex.EncodeToString(r[:]) + ".incomplete"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(body)
	serr := f.Sync()
	cerr := f.Close()
	if werr != nil || serr != nil || cerr != nil {
		os.Remove(tmp)
		return fmt.Errorf("hub: writing %s failed", path)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// summaryFormat is the version of the header summaries' layout.
const summaryFormat = 2

// summaryMagic opens a summary file.
const summaryMagic = "kvcfg-hub-summary"

// summary is what kvcfg keeps of one checkpoint at one commit (commits
// are immutable, so it never goes stale): the config files and every
// shard's parsed header. It lives in kvcfg's own cache, never in the HF
// cache (a header-only .safetensors there would break transformers).
//
// On disk: a line "kvcfg-hub-summary 2", a JSON line with everything but
// the tensors, then one line per tensor, shard after shard: the quoted
// name, dtype, comma-separated shape, begin and end, tab-separated. A
// DeepSeek-V3-sized checkpoint (94,000 tensors) then loads in a fraction
// of the time JSON takes (BenchmarkCachedMoE).
type summary struct {
	Format int    `json:"format"`
	Repo   string `json:"repo"`
	Commit string `json:"commit"`
	// Config and QuantConfig are the files' exact bytes (base64).
	Config      []byte  `json:"config"`
	QuantConfig []byte  `json:"hf_quant_config,omitempty"`
	Shards      []shard `json:"shards"`
}

// shard is one safetensors file of a checkpoint: its path in the repo, its
// size and sha256 when the Hub said them, and its header.
type shard struct {
	File       string             `json:"file"`
	Size       int64              `json:"size"`
	SHA256     string             `json:"sha256,omitempty"`
	DataOffset int64              `json:"data_offset"`
	Metadata   map[string]string  `json:"metadata,omitempty"`
	Tensors    int                `json:"tensors"`
	Header     safetensors.Header `json:"-"`
}

func (c *Client) summaryPath(id, commit string) string {
	if c.opt.HeaderCacheDir == "" {
		return ""
	}
	return filepath.Join(c.opt.HeaderCacheDir, "models--"+strings.ReplaceAll(id, "/", "--"), commit+".summary")
}

func (c *Client) loadSummary(id, commit string) (*summary, bool) {
	p := c.summaryPath(id, commit)
	if p == "" {
		return nil, false
	}
	b, err := inputfile.ReadFile(p, maxSummaryBytes, "a header summary")
	if err != nil {
		return nil, false
	}
	s, err := decodeSummary(b)
	if err != nil || s.Repo != id || s.Commit != commit || len(s.Config) == 0 {
		return nil, false
	}
	return s, true
}

func (c *Client) storeSummary(s *summary) {
	p := c.summaryPath(s.Repo, s.Commit)
	if p == "" {
		return
	}
	b, err := encodeSummary(s)
	if err != nil {
		return
	}
	_ = writeAtomic(p, b)
}

func encodeSummary(s *summary) ([]byte, error) {
	for i := range s.Shards {
		sh := &s.Shards[i]
		sh.DataOffset, sh.Metadata, sh.Tensors = sh.Header.DataOffset, sh.Header.Metadata, len(sh.Header.Tensors)
	}
	s.Format = summaryFormat
	head, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %d\n", summaryMagic, summaryFormat)
	b.Write(head)
	b.WriteByte('\n')
	var line []byte
	for _, sh := range s.Shards {
		for _, t := range sh.Header.Tensors {
			line = strconv.AppendQuote(line[:0], t.Name)
			line = append(line, '\t')
			line = append(line, t.DType...)
			line = append(line, '\t')
			for i, d := range t.Shape {
				if i > 0 {
					line = append(line, ',')
				}
				line = strconv.AppendInt(line, d, 10)
			}
			line = append(line, '\t')
			line = strconv.AppendInt(line, t.Begin, 10)
			line = append(line, '\t')
			line = strconv.AppendInt(line, t.End, 10)
			line = append(line, '\n')
			b.Write(line)
		}
	}
	return b.Bytes(), nil
}

var errSummary = errors.New("hub: bad header summary")

func decodeSummary(b []byte) (*summary, error) {
	first, rest, ok := bytes.Cut(b, []byte{'\n'})
	if !ok || string(first) != fmt.Sprintf("%s %d", summaryMagic, summaryFormat) {
		return nil, errSummary
	}
	head, rest, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok {
		return nil, errSummary
	}
	var s summary
	if err := json.Unmarshal(head, &s); err != nil || s.Format != summaryFormat {
		return nil, errSummary
	}
	lines := bytes.Count(rest, []byte{'\n'})
	for i := range s.Shards {
		sh := &s.Shards[i]
		if sh.Tensors < 0 || sh.Tensors > lines {
			return nil, errSummary // a count the file cannot hold: never sized from
		}
		lines -= sh.Tensors
		sh.Header = safetensors.Header{DataOffset: sh.DataOffset, Metadata: sh.Metadata, Tensors: make([]safetensors.TensorInfo, sh.Tensors)}
		for j := range sh.Header.Tensors {
			var line []byte
			line, rest, ok = bytes.Cut(rest, []byte{'\n'})
			if !ok {
				return nil, errSummary
			}
			t, err := parseTensorLine(line)
			if err != nil {
				return nil, err
			}
			sh.Header.Tensors[j] = t
		}
	}
	if len(rest) != 0 {
		return nil, errSummary
	}
	return &s, nil
}

func parseTensorLine(line []byte) (safetensors.TensorInfo, error) {
	var t safetensors.TensorInfo
	var f [5][]byte
	for k := range 4 {
		j := bytes.IndexByte(line, '\t')
		if j < 0 {
			return t, errSummary
		}
		f[k], line = line[:j], line[j+1:]
	}
	f[4] = line
	q := f[0]
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return t, errSummary
	}
	if bytes.IndexByte(q, '\\') < 0 {
		t.Name = string(q[1 : len(q)-1])
	} else {
		name, err := strconv.Unquote(string(q))
		if err != nil {
			return t, errSummary
		}
		t.Name = name
	}
	t.DType = string(f[1])
	t.Shape = make([]int64, 0, bytes.Count(f[2], []byte{','})+1)
	for d := f[2]; len(d) > 0; {
		j := bytes.IndexByte(d, ',')
		if j < 0 {
			j = len(d)
		}
		n, ok := atoi(d[:j])
		if !ok {
			return t, errSummary
		}
		t.Shape = append(t.Shape, n)
		if j == len(d) {
			break
		}
		d = d[j+1:]
	}
	var ok1, ok2 bool
	t.Begin, ok1 = atoi(f[3])
	t.End, ok2 = atoi(f[4])
	if !ok1 || !ok2 {
		return t, errSummary
	}
	return t, nil
}

// atoi parses a non-negative decimal without allocating.
func atoi(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
