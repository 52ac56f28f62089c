package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/kvcfg/kvcfg/format/safetensors"
	"github.com/kvcfg/kvcfg/model"
)

// QuantConfigFile is ModelOpt's quantization file next to config.json; its
// contents stand in for a missing quantization_config (SGLang and vLLM
// read it the same way), so `auto` KV dtypes resolve as the engine does.
const QuantConfigFile = "hf_quant_config.json"

// Resolver resolves a Hugging Face Hub id that is neither a file, a
// directory nor a catalog name: the hub package's Client is one (it reads
// the local HF cache first, then the Hub). A Resolver's errors that mean
// "no such model" wrap ErrUnknownModel.
type Resolver interface {
	// Resolve returns the model id ("org/name") names at revision ("" for
	// the default branch).
	Resolve(ctx context.Context, id, revision string) (*Model, error)
}

// Options are OpenContext's options.
type Options struct {
	// Revision is the Hub revision (branch, tag or commit) of an HF id; a
	// reference's own "@revision" suffix wins. With a revision, an id is
	// not looked up in the catalog (the catalog holds no revisions).
	Revision string
	// Resolver, when set, resolves HF ids after the catalog (and replaces
	// the plain HF cache lookup, which it does itself); nil means the
	// local HF cache only, never the network.
	Resolver Resolver
}

// OpenContext resolves a model reference as Open does, in this order: an
// existing file or directory, a catalog name, then the HF id through
// o.Resolver (the local HF cache, then the Hub) or, without one, the local
// HF cache only. A Hub "not found" gets the close catalog names as a hint.
func OpenContext(ctx context.Context, ref string, o Options) (*Model, error) {
	if o.Resolver == nil && o.Revision == "" {
		return Open(ref)
	}
	if strings.TrimSpace(ref) == "" {
		return nil, fmt.Errorf("%w: empty model reference (run `kvcfg models` for the catalog)", ErrUnknownModel)
	}
	if _, err := os.Stat(ref); err == nil || looksLikePath(ref) {
		return Open(ref) // read once per process
	}
	id, rev, hasRev := strings.Cut(ref, "@")
	if !hasRev {
		rev = o.Revision
	}
	if rev == "" {
		if e, ok := lookup(id); ok {
			return openEntry(e)
		}
	}
	if !ValidHFID(id) {
		return nil, unknownRef(ref)
	}
	if o.Resolver == nil {
		snap, err := CachedSnapshot(id + "@" + rev)
		if err != nil {
			return nil, unknownRef(ref)
		}
		m, err := openPath(snap, SourceHFCache)
		if err == nil {
			m.Revision = commitOf(snap)
		}
		return m, err
	}
	m, err := o.Resolver.Resolve(ctx, id, rev)
	if err != nil {
		// Close catalog names help whether the Hub lacks the id or could
		// not be asked (unreachable, offline, refused): those plan anyway.
		if close := Suggest(id, 3); len(close) > 0 {
			if errors.Is(err, ErrUnknownModel) {
				return nil, fmt.Errorf("%w (close catalog names: %s)", err, strings.Join(close, ", "))
			}
			return nil, fmt.Errorf("%w; did you mean %s? (catalog names, planned without the Hub)", err, strings.Join(close, ", "))
		}
		return nil, err
	}
	return m, nil
}

func commitOf(snap string) string {
	i := strings.LastIndexAny(snap, `/\`)
	return snap[i+1:]
}

// ValidHFID reports whether id is a namespaced Hub model id ("org/name"):
// letters, digits, '-', '_' and '.', each part starting with a letter or a
// digit, at most 96 characters each, no "--" or "..", not ending in ".git".
// URLs, paths and revisions never match.
func ValidHFID(id string) bool {
	org, name, ok := strings.Cut(id, "/")
	if !ok || len(org) > 96 || len(name) > 96 || !isRepoID(id) {
		return false
	}
	return !strings.Contains(id, "--") && !strings.Contains(id, "..") && !strings.HasSuffix(id, ".git")
}

// NewHub builds the Model of a Hub checkpoint: id names it, commit is the
// revision the files were read at, config is its config.json, quantConfig
// its hf_quant_config.json (nil when absent) and headers its safetensors
// headers (nil when it has none).
func NewHub(id, commit string, config, quantConfig []byte, headers []safetensors.Header) (*Model, error) {
	data := config
	if len(quantConfig) > 0 {
		data = WithQuantConfig(config, quantConfig)
	}
	s, err := model.Parse(data, id)
	if err != nil {
		return nil, err
	}
	return &Model{Name: id, Source: SourceHub, Config: data, Spec: s, Revision: commit, Headers: headers}, nil
}

// WithQuantConfig returns config with q (an hf_quant_config.json) as its
// quantization_config when config has none; otherwise, or when either is
// not a JSON object, config unchanged.
func WithQuantConfig(config, q []byte) []byte {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(config, &root); err != nil {
		return config
	}
	if _, ok := root["quantization_config"]; ok {
		return config
	}
	q = bytes.TrimSpace(q)
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(q, &obj); err != nil {
		return config
	}
	root["quantization_config"] = q
	out, err := json.Marshal(root)
	if err != nil {
		return config
	}
	return out
}
