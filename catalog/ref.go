package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/internal/inputfile"
	"github.com/kvcfg/kvcfg/model"
)

// Where a Model came from.
const (
	SourceCatalog = "catalog"   // an embedded config
	SourceFile    = "file"      // a config.json path
	SourceDir     = "directory" // a model directory (its safetensors give the weights)
	SourceHFCache = "hf_cache"  // a snapshot in the local HuggingFace cache
	SourceInline  = "inline"    // a config passed as bytes (HTTP API, Go callers)
	SourceHub     = "hub"       // config.json and safetensors headers from the Hugging Face Hub
)

// Model is one resolved model reference: what `--model` names, read and
// parsed once. Everything downstream (sizing, weights, the vision-tower
// rule, reports) takes this value instead of resolving the name again.
//
// A Model is immutable once returned: plans only read it, so one Model
// serves any number of concurrent plans.
type Model struct {
	// Name is what reports call the model: the HF id for catalog and cache
	// models, else the path or name given.
	Name string
	// Source is one of the Source constants.
	Source string
	// Config is the raw config.json.
	Config []byte
	// Dir is the checkpoint directory whose *.safetensors headers give the
	// weight sizes ("" when there is none: catalog and inline models).
	Dir string
	// Spec is Config parsed (vision-tower dims included).
	Spec *model.Spec
	// Revision is the commit the config was read at, for models from the
	// Hub or the HF cache ("" otherwise).
	Revision string
	// Headers are the checkpoint's safetensors headers, one per shard,
	// when they were read without the files (from the Hub, or kvcfg's
	// header cache of an earlier Hub read); nil otherwise.
	Headers []safetensors.Header
}

// parsed caches the catalog's parsed entries: the embedded configs never
// change, so each is parsed at most once per process.
var parsed sync.Map // HF id → *Model

// byRef remembers the references Open resolved to a catalog entry or an
// HF cache snapshot (both immutable), so that the next Open of the same
// reference does no file-system call at all.
var byRef sync.Map // reference as given → *Model

// Open resolves a model reference in this order: an existing config.json
// or model directory, a catalog name, an HF id ("org/name[@revision]") in
// the local HuggingFace cache (never the network). A reference that looks
// like a path (starts with "/", "./", "../" or "~", or ends in ".json") is
// only read as a path. Unknown names get an error listing close catalog
// names.
//
// Every model is read and parsed once per process: a reference that
// resolved (a catalog entry, an HF cache snapshot, a config file or a model
// directory) is remembered, and later calls with it touch no file. A file
// changed, or a directory of the same name created, later in the same
// process is not noticed until Forget(ref).
func Open(ref string) (*Model, error) {
	if strings.TrimSpace(ref) == "" {
		return nil, fmt.Errorf("%w: empty model reference (run `kvcfg models` for the catalog)", ErrUnknownModel)
	}
	if m, ok := byRef.Load(ref); ok {
		return m.(*Model), nil
	}
	if _, err := os.Stat(ref); err == nil || looksLikePath(ref) {
		m, err := openPath(ref, SourceFile) // a path reports its own stat error
		if err != nil {
			return nil, err
		}
		got, _ := byRef.LoadOrStore(ref, m)
		return got.(*Model), nil
	}
	var m *Model
	var err error
	if e, ok := lookup(ref); ok {
		m, err = openEntry(e)
	} else if snap, serr := CachedSnapshot(ref); serr == nil {
		m, err = openPath(snap, SourceHFCache)
		if err == nil {
			m.Revision = filepath.Base(snap)
		}
	} else {
		return nil, unknownRef(ref)
	}
	if err != nil {
		return nil, err
	}
	byRef.Store(ref, m)
	return m, nil
}

// Forget drops what Open remembers of ref, so the next Open reads it
// again (a config file edited while the process runs, say).
func Forget(ref string) { byRef.Delete(ref) }

// Inline parses a config given as bytes; name only names it ("inline-config"
// when empty).
func Inline(name string, config []byte) (*Model, error) {
	if name == "" {
		name = "inline-config"
	}
	s, err := model.Parse(config, name)
	if err != nil {
		return nil, err
	}
	return &Model{Name: name, Source: SourceInline, Config: config, Spec: s}, nil
}

func openEntry(e entry) (*Model, error) {
	if m, ok := parsed.Load(e.name); ok {
		return m.(*Model), nil
	}
	data, err := configs.ReadFile(e.file)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	s, err := model.Parse(data, e.name)
	if err != nil {
		return nil, err
	}
	m, _ := parsed.LoadOrStore(e.name, &Model{Name: e.name, Source: SourceCatalog, Config: data, Spec: s})
	return m.(*Model), nil
}

func openPath(p, source string) (*Model, error) {
	data, name, isDir, err := model.ReadConfig(p)
	if err != nil {
		return nil, err
	}
	if isDir {
		q, err := inputfile.ReadFile(filepath.Join(p, QuantConfigFile), model.MaxConfigBytes, "a "+QuantConfigFile)
		switch {
		case err == nil:
			data = WithQuantConfig(data, q)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("catalog: %w", err)
		}
	}
	s, err := model.Parse(data, name)
	if err != nil {
		return nil, err
	}
	m := &Model{Name: s.Name, Source: source, Config: data, Spec: s}
	if isDir {
		m.Dir = p
		if source == SourceFile {
			m.Source = SourceDir
		}
	}
	return m, nil
}

// OpenEntry resolves a catalog name only (no files, no HF cache): what a
// server that must not read its own disk for a client uses. Entries are
// parsed once per process.
func OpenEntry(name string) (*Model, error) {
	e, ok := lookup(name)
	if !ok {
		return nil, unknown(name)
	}
	return openEntry(e)
}
