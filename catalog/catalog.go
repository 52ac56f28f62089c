// Package catalog is the built-in set of model configs: the config.json of
// well-known models, embedded in the binary so that `--model NAME` works
// offline. Names are HuggingFace ids ("meta-llama/Llama-3.1-8B-Instruct"),
// matched case-insensitively.
//
// To add a model, copy its published config.json (unchanged) to
// configs/<org>__<name>.json; the file name is the HF id with "/" written
// as "__". TestFamilies in package model requires a shape test for every
// catalog entry.
package catalog

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	"github.com/kvcfg/kvcfg/internal/edit"
	"github.com/kvcfg/kvcfg/model"
)

// Default is the model commands use when none is given.
const Default = "meta-llama/Llama-3.1-8B-Instruct"

// ErrUnknownModel reports a name that is neither a catalog entry nor an
// existing path.
var ErrUnknownModel = errors.New("catalog: unknown model")

// configs holds one file per model: configs/<org>__<name>.json.
//
//go:embed configs/*.json
var configs embed.FS

// entry is one catalog model.
type entry struct {
	name string // canonical HF id
	file string // path inside configs
}

// entries maps lowercased HF ids to the catalog's files, built on first use
// (a command that names no model does not pay for it).
var entries = sync.OnceValue(func() map[string]entry {
	files, err := fs.ReadDir(configs, "configs")
	if err != nil {
		return nil
	}
	m := make(map[string]entry, len(files))
	for _, f := range files {
		base, ok := strings.CutSuffix(f.Name(), ".json")
		if !ok {
			continue
		}
		org, name, ok := strings.Cut(base, "__")
		if !ok {
			continue
		}
		id := org + "/" + name
		m[strings.ToLower(id)] = entry{name: id, file: "configs/" + f.Name()}
	}
	return m
})

// Names lists the catalog's HF ids, sorted.
func Names() []string {
	names := make([]string, 0, len(entries()))
	for _, e := range entries() {
		names = append(names, e.name)
	}
	sort.Strings(names)
	return names
}

// lookup finds an entry by HF id, case-insensitively. A bare model name
// without its organisation also matches when it is unique.
func lookup(name string) (entry, bool) {
	// An id spelled as the catalog spells it is its file's name: found
	// without building the index (a plan process looks up one model).
	if org, n, ok := strings.Cut(strings.TrimSpace(name), "/"); ok && org != "" && n != "" &&
		!strings.Contains(n, "/") && !strings.Contains(org, "__") && !strings.Contains(n, "__") {
		file := "configs/" + org + "__" + n + ".json"
		if _, err := fs.Stat(configs, file); err == nil {
			return entry{name: org + "/" + n, file: file}, true
		}
	}
	k := strings.ToLower(strings.TrimSpace(name))
	if e, ok := entries()[k]; ok {
		return e, true
	}
	if strings.Contains(k, "/") {
		return entry{}, false
	}
	var found []entry
	for id, e := range entries() {
		if _, n, _ := strings.Cut(id, "/"); n == k {
			found = append(found, e)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return entry{}, false
}

// Config returns the raw config.json of a catalog model (name
// case-insensitive).
func Config(name string) ([]byte, error) {
	e, ok := lookup(name)
	if !ok {
		return nil, unknown(name)
	}
	return configs.ReadFile(e.file)
}

// Load parses a catalog model; Spec.Name is its canonical HF id.
func Load(name string) (*model.Spec, error) {
	e, ok := lookup(name)
	if !ok {
		return nil, unknown(name)
	}
	data, err := configs.ReadFile(e.file)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return model.Parse(data, e.name)
}

// Resolve reads a model reference: an existing config.json or model
// directory (model.Load), else a catalog name, else an HF id
// ("org/name[@revision]") found in the local HuggingFace hub cache
// (CachedSnapshot; never the network). A reference that looks like a path
// (starts with "/", "./", "../" or "~", or ends in ".json") is only read as
// a path. Unknown names get an error listing close catalog names.
func Resolve(ref string) (*model.Spec, error) {
	m, err := Open(ref)
	if err != nil {
		return nil, err
	}
	return m.Spec, nil
}

func looksLikePath(ref string) bool {
	for _, p := range []string{"/", "./", "../", "~", `.\`, `..\`} {
		if strings.HasPrefix(ref, p) {
			return true
		}
	}
	return strings.HasSuffix(strings.ToLower(ref), ".json") || strings.Contains(ref, `\`)
}

// unknown builds the error for a name not in the catalog.
func unknown(name string) error {
	return fmt.Errorf("%w %q: not in the catalog; %s", ErrUnknownModel, clipName(name), hint(name))
}

// maxEcho is how many bytes of a name an error repeats.
const maxEcho = 256

// clipName cuts name to maxEcho bytes (at a rune boundary) with an
// ellipsis, so that an error does not repeat a megabyte of input.
func clipName(name string) string {
	if len(name) <= maxEcho {
		return name
	}
	i := maxEcho
	for i > 0 && name[i]&0xC0 == 0x80 {
		i--
	}
	return name[:i] + "…"
}

// unknownRef builds Resolve's error for a reference found nowhere.
func unknownRef(ref string) error {
	return fmt.Errorf("%w %q: not an existing file or directory, not in the catalog, not in the HuggingFace cache (%s); %s",
		ErrUnknownModel, clipName(ref), HFCacheDir(), hint(ref))
}

func hint(name string) string {
	h := "run `kvcfg models` for the list"
	if close := Suggest(name, 3); len(close) > 0 {
		h = "did you mean " + strings.Join(close, ", ") + "? (" + h + ")"
	}
	return h
}

// maxSuggestLen is the longest name Suggest looks for close names to:
// catalog names are under 64 bytes, and a longer reference is no typo of
// one (a megabyte-long name would cost seconds of edit distance).
const maxSuggestLen = 128

// Suggest returns up to n catalog names close to name: names containing it
// (or its model part) first, then the nearest by edit distance. Names
// longer than 128 bytes get none; the work is bounded by the catalog's
// size whatever name is given.
func Suggest(name string, n int) []string {
	k := strings.ToLower(strings.TrimSpace(name))
	if k == "" || n <= 0 || len(k) > maxSuggestLen {
		return nil
	}
	_, short, hasOrg := strings.Cut(k, "/")
	if !hasOrg {
		short = k
	}
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	limit := max(3, len(short)/3)
	for id, e := range entries() {
		_, idShort, _ := strings.Cut(id, "/")
		d, ok := edit.Within(k, id, limit)
		if d2, ok2 := edit.Within(short, idShort, limit); ok2 && (!ok || d2 < d) {
			d, ok = d2, true
		}
		if strings.Contains(id, short) || strings.Contains(short, idShort) {
			d, ok = -1, true
		}
		if ok {
			cands = append(cands, cand{e.name, d})
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].d != cands[j].d {
			return cands[i].d < cands[j].d
		}
		return cands[i].name < cands[j].name
	})
	var out []string
	for i := 0; i < len(cands) && i < n; i++ {
		out = append(out, cands[i].name)
	}
	return out
}
