package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kvcfg/kvcfg/model"
)

// ErrNotCached reports a model that is not in the local HuggingFace hub cache.
var ErrNotCached = errors.New("catalog: not in the HuggingFace cache")

// HFCacheDir returns the HuggingFace hub cache root: $HF_HUB_CACHE, else
// $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub. It never touches the network.
func HFCacheDir() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("HF_HOME"); d != "" {
		return filepath.Join(d, "hub")
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "huggingface", "hub")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "huggingface", "hub")
}

var (
	hfID      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)
	commitRef = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// CachedSnapshot returns the snapshot directory of HF id "org/name" (or
// "org/name@revision", default revision "main") in the local hub cache:
// <root>/models--org--name/snapshots/<commit>, the commit read from
// refs/<revision> unless the revision is a 40-hex commit. When refs/main is
// missing but exactly one snapshot holds a config.json, that one is used.
func CachedSnapshot(ref string) (string, error) {
	id, rev, _ := strings.Cut(strings.TrimSpace(ref), "@")
	if !hfID.MatchString(id) || strings.Contains(id, "..") {
		return "", fmt.Errorf("%w: %q is not an org/name id", ErrNotCached, ref)
	}
	if rev == "" {
		rev = "main"
	}
	root := HFCacheDir()
	if root == "" {
		return "", fmt.Errorf("%w: no cache directory", ErrNotCached)
	}
	repo := filepath.Join(root, "models--"+strings.ReplaceAll(id, "/", "--"))
	commit := rev
	if !commitRef.MatchString(rev) {
		if strings.ContainsAny(rev, `/\`) || strings.Contains(rev, "..") {
			return "", fmt.Errorf("%w: bad revision %q", ErrNotCached, rev)
		}
		b, err := os.ReadFile(filepath.Join(repo, "refs", rev))
		if err == nil {
			commit = strings.TrimSpace(string(b))
		} else if rev == "main" {
			commit = soleSnapshot(repo)
		}
		if !commitRef.MatchString(commit) {
			return "", fmt.Errorf("%w: %s (revision %s) under %s", ErrNotCached, id, rev, root)
		}
	}
	snap := filepath.Join(repo, "snapshots", commit)
	if _, err := os.Stat(filepath.Join(snap, model.ConfigFile)); err != nil {
		return "", fmt.Errorf("%w: %s has no %s at %s", ErrNotCached, id, model.ConfigFile, commit)
	}
	return snap, nil
}

// soleSnapshot returns the only snapshot with a config.json, or "".
func soleSnapshot(repo string) string {
	entries, err := os.ReadDir(filepath.Join(repo, "snapshots"))
	if err != nil {
		return ""
	}
	found := ""
	for _, e := range entries {
		if !e.IsDir() || !commitRef.MatchString(e.Name()) {
			continue
		}
		if _, err := os.Stat(filepath.Join(repo, "snapshots", e.Name(), model.ConfigFile)); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if found != "" {
			return ""
		}
		found = e.Name()
	}
	return found
}
