// Package inputfile opens the files kvcfg reads as input (a config.json, a
// checkpoint's safetensors files and index, a workload trace, a tensor):
// regular files only, never a named pipe, device, socket or directory, and
// never more bytes than the caller's cap.
//
// A FIFO is opened without blocking and refused, so no open waits for a
// writer that never comes; /dev/zero and its kind are refused before the
// first byte is read. Errors name the path and say what it is; callers wrap
// them with their package's prefix.
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Errors returned by the package; every error wraps one of them (or an
// error from os when the file cannot be opened).
var (
	// ErrNotRegular reports a path that is not a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge reports a file larger than the caller's cap.
	ErrTooLarge = errors.New("file too large")
)

// Open opens path for reading when it is a regular file (symbolic links
// followed) and returns its information. Anything else is closed at once
// and reported with ErrNotRegular.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if err := Check(path, st); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// Check returns nil when st describes a regular file, else an error
// wrapping ErrNotRegular that names path and what it is.
func Check(path string, st fs.FileInfo) error {
	if st.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%s is %s, %w", path, Kind(st.Mode()), ErrNotRegular)
}

// Kind names a file mode's type as the error messages say it ("a named
// pipe (FIFO)", "a character device", "a directory"...).
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsRegular():
		return "a regular file"
	}
	return "a special file"
}

// ReadFile reads the regular file path whole when it holds at most limit
// bytes. what names the file in the size error ("a config.json"), which
// gives the limit.
func ReadFile(path string, limit int64, what string) ([]byte, error) {
	f, st, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, path, st.Size(), limit, what)
}

// ReadFS is ReadFile on a file system: name must be a regular file there.
// The type is checked before the file is opened (an fs.FS has no
// non-blocking open).
func ReadFS(fsys fs.FS, name string, limit int64, what string) ([]byte, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if err := Check(name, st); err != nil {
		return nil, err
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := Check(name, st); err != nil {
		return nil, err
	}
	return readAll(f, name, st.Size(), limit, what)
}

// readAll reads r (size bytes by its stat) when it is at most limit bytes,
// and stops at limit+1 should the file grow or its size be wrong.
func readAll(r io.Reader, path string, size, limit int64, what string) ([]byte, error) {
	if size > limit {
		return nil, TooLarge(path, size, limit, what)
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, TooLarge(path, -1, limit, what)
	}
	return b, nil
}

// TooLarge is the error for path, of size bytes (negative: unknown), over
// the limit for what.
func TooLarge(path string, size, limit int64, what string) error {
	got := "more"
	if size >= 0 {
		got = fmt.Sprintf("%d bytes", size)
	}
	return fmt.Errorf("%s holds %s; %s is read up to %s: %w", path, got, what, Bytes(limit), ErrTooLarge)
}

// Bytes writes a limit as people read it: "16 MiB", "1 GiB", "512 bytes".
func Bytes(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
