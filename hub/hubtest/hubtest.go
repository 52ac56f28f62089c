// Package hubtest is a fake Hugging Face Hub for tests: an httptest
// server that answers /resolve URLs the way huggingface.co does (a
// relative 307 to /api/resolve-cache for git files, metadata on the final
// 200; a 302 to a second "CDN" server for safetensors shards, metadata on
// the 302), and a CDN that answers Range requests with 206 from synthetic
// shards whose data regions exist only as a length. Every request is
// recorded, and the CDN fails the test when it sees a token, a multi-range
// request, or a request for a byte past a shard's header.
package hubtest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Tensor is one tensor of a synthetic shard.
type Tensor struct {
	Name  string
	DType string
	Shape []int64
}

// Bits per element of the dtypes Shard accepts.
var bits = map[string]int64{"BOOL": 8, "U8": 8, "I8": 8, "F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8,
	"I16": 16, "F16": 16, "BF16": 16, "I32": 32, "F32": 32, "C64": 64, "I64": 64, "F64": 64, "F4": 4}

// File is a synthetic safetensors file: its first bytes (the 8-byte
// length and the JSON header) and its full size; every byte past Head is
// a zero that is never stored.
type File struct {
	Head []byte
	Size int64
	// SHA256 stands for the content hash (the Hub's X-Linked-Etag).
	SHA256 string
}

// HeaderLen is the JSON header's length N (Head is 8+N bytes).
func (f File) HeaderLen() int64 { return int64(len(f.Head)) - 8 }

// Shard builds a synthetic safetensors file holding ts in order, with a
// "__metadata__" entry and the header padded with spaces to a multiple of
// 8 bytes (and at least pad bytes long, to test long headers).
func Shard(ts []Tensor, pad int) File {
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var off int64
	for _, t := range ts {
		n := bits[t.DType]
		if n == 0 {
			panic("hubtest: unknown dtype " + t.DType)
		}
		for _, d := range t.Shape {
			n *= d
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		hdr[t.Name] = map[string]any{"dtype": t.DType, "shape": shape, "data_offsets": []int64{off, off + n/8}}
		off += n / 8
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		panic(err)
	}
	return Raw(js, off, pad)
}

// Raw builds a file from a header given as JSON (malformed ones included)
// and a data region of data bytes.
func Raw(header []byte, data int64, pad int) File {
	js := append([]byte(nil), header...)
	for len(js) < pad || len(js)%8 != 0 {
		js = append(js, ' ')
	}
	head := make([]byte, 8, 8+len(js))
	binary.LittleEndian.PutUint64(head, uint64(len(js)))
	head = append(head, js...)
	sum := sha256.Sum256(append(head, []byte(strconv.FormatInt(data, 10))...))
	return File{Head: head, Size: int64(len(head)) + data, SHA256: hex.EncodeToString(sum[:])}
}

// Repo is one model repository.
type Repo struct {
	// ID is "org/name"; Commit the 40-hex commit every revision resolves
	// to (Revisions lists the accepted branch names besides "main" and
	// the commit).
	ID        string
	Commit    string
	Revisions []string
	// Files are the small git files (config.json, the index, ...).
	Files map[string][]byte
	// Shards are the LFS files (*.safetensors).
	Shards map[string]File
	// Gated: anonymous requests get 401 GatedRepo, requests with a token
	// other than Token 403 GatedRepo.
	Gated bool
	// Token is the token that may read a gated or private repo.
	Token string
	// Direct serves git files with a 200 instead of the relative 307 (the
	// private / canonical repo shape).
	Direct bool
}

// Request is one recorded request.
type Request struct {
	Server string // "hub" or "cdn"
	Method string
	Path   string // escaped path
	Range  string
	Auth   string
}

// Server is the fake Hub and its CDN.
type Server struct {
	t      testing.TB
	Hub    *httptest.Server
	CDN    *httptest.Server
	repos  map[string]*Repo
	byHash map[string]File

	mu   sync.Mutex
	reqs []Request
	// Hook, when set, sees every hub request first; returning true means
	// it answered.
	Hook func(w http.ResponseWriter, r *http.Request) bool
	// IgnoreRange makes the CDN answer 200 with the whole (synthetic) file,
	// as CloudFront does when asked for gzip.
	IgnoreRange bool
}

// New starts a fake Hub with repos; t.Cleanup closes it.
func New(t testing.TB, repos ...Repo) *Server {
	s := &Server{t: t, repos: map[string]*Repo{}, byHash: map[string]File{}}
	for i := range repos {
		r := repos[i]
		s.repos[r.ID] = &r
		for _, f := range r.Shards {
			s.byHash[f.SHA256] = f
		}
	}
	// Both set before either serves (the handlers read them; a request
	// from another process gives the race detector no order otherwise),
	// the CDN started first: the Hub's redirects name its URL.
	s.Hub = httptest.NewUnstartedServer(http.HandlerFunc(s.hub))
	// Another host:port, so a client must drop the token on the redirect
	// as it must for the real CDN.
	s.CDN = httptest.NewUnstartedServer(http.HandlerFunc(s.cdn))
	s.CDN.Start()
	s.Hub.Start()
	t.Cleanup(s.Close)
	return s
}

// URL is the Hub's endpoint (HF_ENDPOINT).
func (s *Server) URL() string { return s.Hub.URL }

// Close stops both servers (a stopped Hub refuses connections).
func (s *Server) Close() {
	s.Hub.Close()
	s.CDN.Close()
}

// Requests returns the requests so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Reset forgets the recorded requests.
func (s *Server) Reset() {
	s.mu.Lock()
	s.reqs = nil
	s.mu.Unlock()
}

func (s *Server) record(server string, r *http.Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{Server: server, Method: r.Method, Path: r.URL.EscapedPath(), Range: r.Header.Get("Range"), Auth: r.Header.Get("Authorization")})
	s.mu.Unlock()
}

// hub answers a request to the fake Hub: the API routes, then resolve.
func (s *Server) hub(w http.ResponseWriter, r *http.Request) {
	s.record("hub", r)
	if s.Hook != nil && s.Hook(w, r) {
		return
	}
	p := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(p, "/api/resolve-cache/models/"); ok {
		s.resolveCache(w, r, rest)
		return
	}
	if rest, ok := strings.CutPrefix(p, "/api/models/"); ok {
		s.tree(w, r, rest)
		return
	}
	s.resolve(w, r, p)
}

// resolve answers /{org}/{name}/resolve/{rev}/{file...} as the Hub does:
// a redirect to the CDN for a shard, the file itself for a Direct repo,
// else a redirect to resolve-cache.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request, p string) {
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 5)
	if len(parts) < 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	id := parts[0] + "/" + parts[1]
	rev, err := url.PathUnescape(parts[3])
	if err != nil {
		http.Error(w, "bad revision", http.StatusBadRequest)
		return
	}
	file, err := url.PathUnescape(parts[4])
	if err != nil {
		http.Error(w, "bad file", http.StatusBadRequest)
		return
	}
	repo, ok := s.authorize(w, r, id, rev)
	if !ok {
		return
	}
	w.Header().Set("X-Repo-Commit", repo.Commit)
	if f, ok := repo.Shards[file]; ok {
		s.redirectShard(w, f)
		return
	}
	body, ok := repo.Files[file]
	if !ok {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	if repo.Direct {
		serveGit(w, body)
		return
	}
	w.Header().Set("Location", "/api/resolve-cache/models/"+id+"/"+repo.Commit+"/"+url.PathEscape(file)+"?etag=%22"+gitSHA1(body)+"%22")
	w.WriteHeader(http.StatusTemporaryRedirect)
}

// authorize returns repo id when the request may read revision rev of it;
// otherwise it answers with the Hub's error (RepoNotFound, GatedRepo or
// RevisionNotFound) and returns false.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, id, rev string) (*Repo, bool) {
	repo, ok := s.repos[id]
	auth := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		status := http.StatusUnauthorized
		if auth != "" {
			status = http.StatusNotFound
		}
		http.Error(w, "Repository not found", status)
		return nil, false
	}
	if repo.Gated && auth != repo.Token {
		w.Header().Set("X-Error-Code", "GatedRepo")
		w.Header().Set("X-Error-Message", "Access to model "+id+" is restricted.")
		status := http.StatusUnauthorized
		if auth != "" {
			status = http.StatusForbidden
		}
		http.Error(w, "gated", status)
		return nil, false
	}
	if rev != "main" && rev != repo.Commit && !contains(repo.Revisions, rev) {
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, "Revision not found", http.StatusNotFound)
		return nil, false
	}
	return repo, true
}

// redirectShard answers a shard's resolve with the Hub's Xet redirect to
// the CDN.
func (s *Server) redirectShard(w http.ResponseWriter, f File) {
	w.Header().Set("X-Linked-Etag", `"`+f.SHA256+`"`)
	w.Header().Set("X-Linked-Size", strconv.FormatInt(f.Size, 10))
	w.Header().Set("X-Xet-Hash", f.SHA256[:32])
	w.Header().Set("ETag", `"redirect-etag"`)
	w.Header().Set("Location", s.CDN.URL+"/xet-bridge/"+f.SHA256+"?X-Amz-Signature=sig")
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusFound)
}

func (s *Server) resolveCache(w http.ResponseWriter, r *http.Request, rest string) {
	parts := strings.SplitN(rest, "/", 4)
	if len(parts) < 4 {
		http.NotFound(w, r)
		return
	}
	repo, ok := s.repos[parts[0]+"/"+parts[1]]
	file, _ := url.PathUnescape(parts[3])
	if !ok || parts[2] != repo.Commit {
		http.NotFound(w, r)
		return
	}
	body, ok := repo.Files[file]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("X-Repo-Commit", repo.Commit)
	serveGit(w, body)
}

// treePage is how many entries one page of the tree API holds, so that
// tests see the Link pagination.
const treePage = 2

// tree answers /api/models/{org}/{name}/tree/{rev}?recursive=true, paginated
// with Link rel="next" and a cursor.
func (s *Server) tree(w http.ResponseWriter, r *http.Request, rest string) {
	parts := strings.SplitN(rest, "/", 4)
	if len(parts) < 4 || parts[2] != "tree" {
		http.NotFound(w, r)
		return
	}
	repo, ok := s.repos[parts[0]+"/"+parts[1]]
	if !ok {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, "Repository not found", http.StatusUnauthorized)
		return
	}
	type lfs struct {
		OID         string `json:"oid"`
		Size        int64  `json:"size"`
		PointerSize int    `json:"pointerSize"`
	}
	type entry struct {
		Type string `json:"type"`
		OID  string `json:"oid"`
		Size int64  `json:"size"`
		Path string `json:"path"`
		LFS  *lfs   `json:"lfs,omitempty"`
	}
	var all []entry
	for p, b := range repo.Files {
		all = append(all, entry{Type: "file", OID: gitSHA1(b), Size: int64(len(b)), Path: p})
	}
	for p, f := range repo.Shards {
		all = append(all, entry{Type: "file", OID: gitSHA1([]byte(f.SHA256)), Size: f.Size, Path: p, LFS: &lfs{OID: f.SHA256, Size: f.Size, PointerSize: 134}})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Path < all[j].Path })
	start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	end := min(start+treePage, len(all))
	if start > len(all) {
		start = len(all)
	}
	if end < len(all) {
		next := *r.URL
		q := next.Query()
		q.Set("cursor", strconv.Itoa(end))
		next.RawQuery = q.Encode()
		w.Header().Set("Link", "<"+s.Hub.URL+next.RequestURI()+`>; rel="next"`)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(all[start:end])
}

func serveGit(w http.ResponseWriter, body []byte) {
	w.Header().Set("ETag", `"`+gitSHA1(body)+`"`)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

func (s *Server) cdn(w http.ResponseWriter, r *http.Request) {
	s.record("cdn", r)
	if r.Header.Get("Authorization") != "" {
		s.t.Errorf("hubtest: the CDN got an Authorization header")
	}
	hash := strings.TrimPrefix(r.URL.Path, "/xet-bridge/")
	f, ok := s.byHash[hash]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("ETag", `"`+f.SHA256+`"`)
	rng := r.Header.Get("Range")
	if rng == "" || s.IgnoreRange {
		w.Header().Set("Content-Length", strconv.FormatInt(f.Size, 10))
		w.WriteHeader(http.StatusOK)
		writeSpan(w, f, 0, f.Size) // stops when the client hangs up
		return
	}
	spec, ok := strings.CutPrefix(rng, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		s.t.Errorf("hubtest: the CDN got Range %q (one bytes=A-B range only)", rng)
		http.Error(w, "bad range", http.StatusBadRequest)
		return
	}
	as, bs, _ := strings.Cut(spec, "-")
	a, err1 := strconv.ParseInt(as, 10, 64)
	b, err2 := strconv.ParseInt(bs, 10, 64)
	if err1 != nil || err2 != nil || b < a {
		s.t.Errorf("hubtest: the CDN got Range %q", rng)
		http.Error(w, "bad range", http.StatusBadRequest)
		return
	}
	if a >= f.Size {
		w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(f.Size, 10))
		w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		return
	}
	b = min(b, f.Size-1)
	if b >= int64(len(f.Head)) {
		s.t.Errorf("hubtest: the CDN was asked for byte %d of a shard whose header ends at byte %d (tensor data)", b, len(f.Head)-1)
	}
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", a, b, f.Size))
	w.Header().Set("Content-Length", strconv.FormatInt(b-a+1, 10))
	w.WriteHeader(http.StatusPartialContent)
	writeSpan(w, f, a, b+1)
}

// writeSpan writes bytes [a, b) of f: its head, then zeros.
func writeSpan(w http.ResponseWriter, f File, a, b int64) {
	if a < int64(len(f.Head)) {
		end := min(b, int64(len(f.Head)))
		if _, err := w.Write(f.Head[a:end]); err != nil {
			return
		}
		a = end
	}
	zeros := make([]byte, 32<<10)
	for a < b {
		n := min(b-a, int64(len(zeros)))
		if _, err := w.Write(zeros[:n]); err != nil {
			return
		}
		a += n
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func gitSHA1(body []byte) string {
	return sha1Hex(fmt.Sprintf("blob %d\x00", len(body)), body)
}

// RangesFor returns the Range headers of the CDN requests for the shard
// with that sha256, sorted ("" for a request without one).
func (s *Server) RangesFor(sha string) []string {
	var out []string
	for _, r := range s.Requests() {
		if r.Server == "cdn" && strings.HasSuffix(r.Path, sha) {
			out = append(out, r.Range)
		}
	}
	sort.Strings(out)
	return out
}
