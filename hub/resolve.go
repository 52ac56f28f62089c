package hub

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvcfg/kvcfg/catalog"
	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/model"
)

// The files a checkpoint is read from.
const (
	indexFile  = "model.safetensors.index.json"
	singleFile = "model.safetensors"
	// maxSmallFile bounds config.json, hf_quant_config.json and an index.
	maxSmallFile = 64 << 20
	// firstRead is the first range of a shard: its 8-byte header length.
	// The second range is exactly the JSON header, so no byte of tensor
	// data is ever requested (two small requests per shard).
	firstRead = 8
)

// Resolve returns the model id ("org/name") names at revision (a branch,
// tag or commit; "" is main): from the caches when the HF cache knows the
// revision's commit and kvcfg's cache holds its headers (no request at
// all), else from the Hub: config.json pins the commit, then every file is
// read at that commit, each shard's header with range requests. With
// Offline, only the caches answer; a snapshot holding config.json but no
// headers then plans from the config alone, as without the Hub.
//
// The Model's Source is catalog.SourceHub and its Headers the shards'
// headers (catalog.SourceHFCache and a checkpoint directory for a
// snapshot that holds the .safetensors files themselves).
func (c *Client) Resolve(ctx context.Context, id, revision string) (*catalog.Model, error) {
	if !catalog.ValidHFID(id) {
		return nil, fmt.Errorf("%w: %q (want org/name, as on the Hub)", ErrBadID, id)
	}
	rev := revision
	if rev == "" {
		rev = "main"
	}
	if !validRevision(rev) {
		return nil, fmt.Errorf("%w: bad revision %q", ErrBadID, rev)
	}
	if m, err, ok := c.mem.lookup(id, rev, time.Now()); ok {
		return m, err
	}
	return c.shared(ctx, id, rev)
}

// shared runs the read of id at rev once for every caller asking for it
// meanwhile, and remembers its outcome (see memory). With a Timeout the
// read has its own deadline and outlives a caller that gives up, since
// others may be waiting for it; without one it ends with the first
// caller's context.
func (c *Client) shared(ctx context.Context, id, rev string) (*catalog.Model, error) {
	key := id + "@" + rev
	f, leader := c.mem.join(key)
	if leader {
		rctx := ctx
		if c.opt.Timeout > 0 {
			rctx = context.WithoutCancel(ctx)
		}
		go func() {
			f.m, f.err = c.resolve(rctx, id, rev)
			// A read that ended with its caller's context failed for
			// that caller only: not remembered for the others.
			if f.err == nil || rctx.Err() == nil {
				c.mem.store(id, rev, f.m, f.err, time.Now())
			}
			c.mem.land(key, f)
		}()
	}
	select {
	case <-f.done:
		return f.m, f.err
	case <-ctx.Done():
		return nil, c.timeoutErr(ctx, ctx.Err())
	}
}

// resolve reads id at rev from the caches, else from the Hub, within
// Timeout.
func (c *Client) resolve(ctx context.Context, id, rev string) (*catalog.Model, error) {
	if c.opt.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opt.Timeout)
		defer cancel()
	}
	if commit := c.cachedCommit(id, rev); commit != "" {
		if m := c.mem.model(id, commit); m != nil {
			return m, nil
		}
		if m, ok, err := c.fromCache(id, commit); ok || err != nil {
			return m, err
		}
	}
	if c.opt.Offline {
		return nil, fmt.Errorf("%w: %w %q: at revision %s it is not in the HF cache (%s) with its headers in kvcfg's cache (%s), and HF_HUB_OFFLINE is set: unset it to read the Hub, or pass --model DIR",
			ErrOffline, catalog.ErrUnknownModel, id, rev, c.opt.CacheDir, c.opt.HeaderCacheDir)
	}
	return c.fetch(ctx, id, rev)
}

// validRevision accepts git ref names: no "..", no leading "/", no
// control characters or backslashes.
func validRevision(rev string) bool {
	if rev == "" || len(rev) > 256 || strings.Contains(rev, "..") || strings.HasPrefix(rev, "/") || strings.HasSuffix(rev, "/") {
		return false
	}
	for _, r := range rev {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return false
		}
	}
	return true
}

// fromCache builds the model of id at commit from the caches alone. ok is
// false when they do not hold enough.
func (c *Client) fromCache(id, commit string) (*catalog.Model, bool, error) {
	if s, ok := c.loadSummary(id, commit); ok {
		m, err := s.model()
		return m, true, err
	}
	if _, _, ok := c.cachedFile(id, commit, model.ConfigFile); !ok {
		return nil, false, nil
	}
	snap := filepath.Join(c.repoDir(id), "snapshots", commit)
	full, _ := filepath.Glob(filepath.Join(snap, "*.safetensors"))
	if len(full) == 0 && !c.opt.Offline {
		return nil, false, nil // online: read the headers from the Hub
	}
	m, err := catalog.Open(snap)
	if err != nil {
		return nil, true, err
	}
	cp := *m
	cp.Name, cp.Source, cp.Revision = id, catalog.SourceHFCache, commit
	if len(full) == 0 {
		cp.Dir = ""
	}
	return &cp, true, nil
}

// model builds the catalog Model of a summary.
func (s *summary) model() (*catalog.Model, error) {
	var hdrs []safetensors.Header
	for _, sh := range s.Shards {
		hdrs = append(hdrs, sh.Header)
	}
	m, err := catalog.NewHub(s.Repo, s.Commit, s.Config, s.QuantConfig, hdrs)
	if err != nil {
		return nil, fmt.Errorf("hub: %s@%s: %w", s.Repo, s.Commit, err)
	}
	return m, nil
}

// fetch reads a checkpoint from the Hub: config.json at rev (which pins
// the commit), then, unless memory or kvcfg's cache holds that commit,
// hf_quant_config.json, the index and every shard's header at that commit.
func (c *Client) fetch(ctx context.Context, id, rev string) (*catalog.Model, error) {
	cfg, commit, err := c.fetchConfig(ctx, id, rev)
	if err != nil {
		return nil, err
	}
	if m := c.mem.model(id, commit); m != nil {
		return m, nil
	}
	if s, ok := c.loadSummary(id, commit); ok {
		return s.model()
	}
	s := &summary{Format: summaryFormat, Repo: id, Commit: commit, Config: cfg}
	q, err := c.optionalFile(ctx, id, commit, catalog.QuantConfigFile)
	if err != nil {
		return nil, err
	}
	if q != nil && json.Valid(q) {
		s.QuantConfig = q
	}
	files, weightMap, err := c.shardFiles(ctx, id, commit)
	if err != nil {
		return nil, err
	}
	if s.Shards, err = c.readShards(ctx, id, commit, files); err != nil {
		return nil, err
	}
	if len(s.Shards) == 1 && s.Shards[0].File == "" {
		// No index and no model.safetensors: other names
		// (consolidated.safetensors, ...) from the file listing.
		if files, err = c.listSafetensors(ctx, id, commit); err != nil {
			return nil, err
		}
		if s.Shards, err = c.readShards(ctx, id, commit, files); err != nil {
			return nil, err
		}
	}
	if err := checkIndex(id, s.Shards, weightMap); err != nil {
		return nil, err
	}
	c.storeSummary(s)
	return s.model()
}

// fetchConfig reads config.json at rev, which pins the commit, and stores
// it in the HF cache.
func (c *Client) fetchConfig(ctx context.Context, id, rev string) ([]byte, string, error) {
	cfg, m, err := c.fetchSmall(ctx, id, rev, model.ConfigFile, maxSmallFile)
	if err != nil {
		var enf *entryNotFound
		if errors.As(err, &enf) {
			return nil, "", fmt.Errorf("%w: %s has no config.json at %s: not a transformers model", ErrNotFound, id, rev)
		}
		return nil, "", err
	}
	commit := m.commit
	if !isCommit(commit) {
		return nil, "", fmt.Errorf("%w: %s sent no X-Repo-Commit for %s: is HF_ENDPOINT a Hub (or a mirror of one)?", ErrUpstream, c.opt.Endpoint, id)
	}
	if !json.Valid(cfg) {
		return nil, "", fmt.Errorf("%w: config.json of %s@%s is not JSON", ErrMalformed, id, commit)
	}
	c.storeFile(id, rev, commit, model.ConfigFile, m.etag, cfg)
	return cfg, commit, nil
}

// optionalFile reads a small file at commit from the HF cache or the Hub;
// nil when the repo does not have it (remembered in .no_exist).
func (c *Client) optionalFile(ctx context.Context, id, commit, file string) ([]byte, error) {
	if b, absent, ok := c.cachedFile(id, commit, file); ok {
		return b, nil
	} else if absent {
		return nil, nil
	}
	b, m, err := c.fetchSmall(ctx, id, commit, file, maxSmallFile)
	var enf *entryNotFound
	if errors.As(err, &enf) {
		c.storeAbsent(id, commit, file)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c.storeFile(id, commit, commit, file, m.etag, b)
	return b, nil
}

// shardFiles lists the safetensors shards: the index's weight_map values
// (sorted, unique), else model.safetensors alone (else, when the HF cache
// knows that file is absent, the listing's top-level *.safetensors). weightMap is the index's
// (nil without one).
func (c *Client) shardFiles(ctx context.Context, id, commit string) ([]string, map[string]string, error) {
	b, err := c.optionalFile(ctx, id, commit, indexFile)
	if err != nil {
		return nil, nil, err
	}
	if b == nil {
		if _, absent, ok := c.cachedFile(id, commit, singleFile); ok && absent {
			files, err := c.listSafetensors(ctx, id, commit)
			return files, nil, err
		}
		return []string{singleFile}, nil, nil
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, nil, fmt.Errorf("%w: %s of %s@%s: %v", ErrMalformed, indexFile, id, commit, err)
	}
	var files []string
	for name, f := range idx.WeightMap {
		p := path.Clean(f)
		if f == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "../") || p == ".." || !strings.HasSuffix(p, ".safetensors") {
			return nil, nil, fmt.Errorf("%w: %s of %s@%s maps %q to %q", ErrMalformed, indexFile, id, commit, name, f)
		}
		files = append(files, p)
	}
	slices.Sort(files)
	files = slices.Compact(files)
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("%w: %s of %s@%s lists no shard", ErrMalformed, indexFile, id, commit)
	}
	return files, idx.WeightMap, nil
}

// readShards reads the headers of files at commit with at most
// Concurrency requests in flight. A single model.safetensors that the repo
// lacks gives one shard with an empty File.
func (c *Client) readShards(ctx context.Context, id, commit string, files []string) ([]shard, error) {
	out := make([]shard, len(files))
	errs := make([]error, len(files))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, c.opt.Concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var tensors atomic.Int64 // listed by the headers read so far
	done := 0
	progress := c.opt.Progress != nil && len(files) > 1
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				return
			}
			sh, err := c.readShard(ctx, id, commit, f, &tensors)
			var enf *entryNotFound
			if err != nil && len(files) == 1 && f == singleFile && errors.As(err, &enf) {
				c.storeAbsent(id, commit, f)
				return // no safetensors at all
			}
			out[i], errs[i] = sh, err
			if err != nil {
				cancel()
			}
			if progress {
				mu.Lock()
				done++
				fmt.Fprintf(c.opt.Progress, "\rreading safetensors headers of %s: %d/%d shards", id, done, len(files))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if progress {
		fmt.Fprintln(c.opt.Progress)
	}
	// The first failure, not a read it cancelled.
	var first error
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
		if first == nil {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil && len(files) > 0 {
		// cancelled only by a failure above; the parent's deadline
		// reports through readShard's errors.
		return nil, c.timeoutErr(ctx, err)
	}
	return out, nil
}

// readShard reads one shard's 8-byte length and JSON header, never its
// data: one range for the length, a second for exactly the header. The
// header is checked against the client's limits (its length before it is
// read, the tensors it lists, with those of the checkpoint's other shards
// in tensors, before it is parsed), the safetensors rules and the file
// size the Hub reports.
func (c *Client) readShard(ctx context.Context, id, commit, file string, tensors *atomic.Int64) (shard, error) {
	name := id + "@" + commit[:12] + ": " + file
	buf, total, m, err := c.rangeGet(ctx, id, commit, file, 0, firstRead-1)
	if err != nil {
		return shard{}, err
	}
	if len(buf) < 8 {
		return shard{}, fmt.Errorf("%w: %s: %d bytes, shorter than the 8-byte header length", ErrMalformed, name, len(buf))
	}
	need, err := c.headerSize(name, binary.LittleEndian.Uint64(buf[:8]), total)
	if err != nil {
		return shard{}, err
	}
	if err := c.inflight.acquire(ctx, need); err != nil {
		return shard{}, c.timeoutErr(ctx, err)
	}
	defer c.inflight.release(need)
	if need > int64(len(buf)) {
		rest, t2, _, err := c.rangeGet(ctx, id, commit, file, int64(len(buf)), need-1)
		if err != nil {
			return shard{}, err
		}
		if total < 0 {
			total = t2
		}
		buf = append(buf, rest...)
		if int64(len(buf)) < need {
			return shard{}, fmt.Errorf("%w: %s: header says %d bytes, the file ends after %d", ErrMalformed, name, need-8, len(buf)-8)
		}
	}
	h, err := c.parseHeader(ctx, name, buf[:need], total, tensors)
	if err != nil {
		return shard{}, err
	}
	sh := shard{File: file, Size: total, Header: *h}
	if isEtag(m.linkedEtag) && len(m.linkedEtag) == 64 {
		sh.SHA256 = m.linkedEtag
	}
	return sh, nil
}

// parseHeader parses a shard's raw header (its 8-byte length and JSON)
// and checks it against the safetensors rules and the file's size (total,
// -1 when unknown). Parsing takes about ten times the header's bytes, so
// it holds them from the client's parse budget; the tensors it lists are
// counted, with the checkpoint's other shards' in tensors, before it
// starts.
func (c *Client) parseHeader(ctx context.Context, name string, raw []byte, total int64, tensors *atomic.Int64) (*safetensors.Header, error) {
	if k := tensors.Add(int64(bytes.Count(raw[8:], []byte(`"data_offsets"`)))); k > int64(c.opt.MaxTensors) {
		return nil, fmt.Errorf("%w: %s: the checkpoint's headers list over %d tensors, the limit (Options.MaxTensors)", ErrTooLarge, name, c.opt.MaxTensors)
	}
	n := int64(len(raw))
	if err := c.parsing.acquire(ctx, n); err != nil {
		return nil, c.timeoutErr(ctx, err)
	}
	defer c.parsing.release(n)
	if err := ctx.Err(); err != nil {
		return nil, c.timeoutErr(ctx, err) // another shard failed meanwhile
	}
	h, err := safetensors.ReadHeader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMalformed, name, err)
	}
	if err := h.CheckLayout(total); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMalformed, name, err)
	}
	return h, nil
}

// headerSize checks a shard's header length n (from its first 8 bytes)
// against the safetensors bound, the client's MaxHeaderBytes and the
// file's size (total, -1 when unknown), and returns the bytes to read:
// 8+n.
func (c *Client) headerSize(name string, n uint64, total int64) (int64, error) {
	if n > safetensors.MaxHeaderBytes {
		return 0, fmt.Errorf("%w: %s: header length %d exceeds %d bytes", ErrMalformed, name, n, safetensors.MaxHeaderBytes)
	}
	if int64(n) > c.opt.MaxHeaderBytes {
		return 0, fmt.Errorf("%w: %s: a header of %d bytes, over the limit of %d bytes (Options.MaxHeaderBytes)", ErrTooLarge, name, n, c.opt.MaxHeaderBytes)
	}
	need := 8 + int64(n)
	if total >= 0 && need > total {
		return 0, fmt.Errorf("%w: %s: header length %d runs past the file's %d bytes", ErrMalformed, name, n, total)
	}
	return need, nil
}

// checkIndex requires every tensor the index maps to be in its shard's
// header.
func checkIndex(id string, shards []shard, weightMap map[string]string) error {
	if weightMap == nil {
		return nil
	}
	byFile := map[string]*safetensors.Header{}
	for i := range shards {
		byFile[shards[i].File] = &shards[i].Header
	}
	var missing []string
	for name, f := range weightMap {
		h := byFile[path.Clean(f)]
		if h == nil {
			missing = append(missing, name+" ("+f+")")
			continue
		}
		if _, err := h.Tensor(name); err != nil {
			missing = append(missing, name+" ("+f+")")
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		if len(missing) > 3 {
			missing = append(missing[:3], fmt.Sprintf("and %d more", len(missing)-3))
		}
		return fmt.Errorf("%w: %s: %s maps tensors its shards lack: %s", ErrMalformed, id, indexFile, strings.Join(missing, ", "))
	}
	return nil
}

// maxTreePages bounds the pages of a file listing followed.
const maxTreePages = 100

// listSafetensors lists the *.safetensors files at the repo's top level
// through the tree API (an "API" request, rate-limited more tightly than
// /resolve, so only used when neither the index nor model.safetensors
// exists), following the Link rel="next" pages. None is not an error.
func (c *Client) listSafetensors(ctx context.Context, id, commit string) ([]string, error) {
	next := c.opt.Endpoint + "/api/models/" + id + "/tree/" + url.PathEscape(commit)
	var files []string
	for page := 0; next != ""; page++ {
		if page == maxTreePages {
			return nil, fmt.Errorf("%w: the file listing of %s has more than %d pages", ErrUpstream, id, maxTreePages)
		}
		resp, _, err := c.get(ctx, next, nil, id, "(file listing)")
		if err != nil {
			return nil, err
		}
		var entries []struct {
			Type string `json:"type"`
			Path string `json:"path"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, maxSmallFile)).Decode(&entries)
		link := resp.Header.Get("Link")
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("%w: the file listing of %s: %v", ErrUpstream, id, err)
		}
		for _, e := range entries {
			if e.Type == "file" && !strings.Contains(e.Path, "/") && strings.HasSuffix(e.Path, ".safetensors") {
				files = append(files, e.Path)
			}
		}
		next = nextLink(link)
		if next != "" && hostOf(next) != c.host {
			return nil, fmt.Errorf("%w: the file listing of %s continues on another host", ErrUpstream, id)
		}
	}
	slices.Sort(files)
	return slices.Compact(files), nil
}

// nextLink returns the URL of the rel="next" entry of a Link header.
func nextLink(h string) string {
	for _, part := range strings.Split(h, ",") {
		u, params, ok := strings.Cut(part, ";")
		if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
			continue
		}
		u = strings.TrimSpace(u)
		if strings.HasPrefix(u, "<") && strings.HasSuffix(u, ">") {
			return u[1 : len(u)-1]
		}
	}
	return ""
}
