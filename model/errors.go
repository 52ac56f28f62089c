package model

import (
	"errors"
	"strings"
)

// Sentinel errors of the model package. Every error Parse, Load and Validate
// return wraps one of them (through a FieldError where a field is at fault),
// so callers can test with errors.Is.
var (
	// ErrSyntax reports a config that is not well-formed JSON (or not a JSON object).
	ErrSyntax = errors.New("model: malformed config.json")
	// ErrMissing reports a field the KV shape needs but the config lacks.
	ErrMissing = errors.New("model: missing field")
	// ErrType reports a field of the wrong JSON type.
	ErrType = errors.New("model: wrong type")
	// ErrRange reports a value that is negative, zero where it must not be,
	// absurdly large, or inconsistent with another field.
	ErrRange = errors.New("model: value out of range")
	// ErrNotFile reports a config path that is neither a regular file nor
	// a directory (a named pipe, a device, a socket).
	ErrNotFile = errors.New("model: not a regular file")
	// ErrNoConfig reports a directory without a config.json.
	ErrNoConfig = errors.New("model: no config.json")
	// ErrShape reports a state shape that cannot be split over the requested
	// tensor-parallel size.
	ErrShape = errors.New("model: state shape does not divide")
)

// FieldError is a problem with one field of a config.json. It is shaped like
// strconv.NumError: Err is one of the package's sentinels wrapped with detail.
type FieldError struct {
	// File is the config's name or path ("" when unknown).
	File string
	// Field is the JSON key, dotted for nested keys ("text_config.num_hidden_layers").
	Field string
	// Err wraps ErrMissing, ErrType or ErrRange with detail.
	Err error
}

// Error implements error: "model: FILE: FIELD: detail".
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString("model: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	b.WriteString(e.Field)
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(strings.TrimPrefix(e.Err.Error(), "model: "))
	}
	return b.String()
}

// Unwrap returns the wrapped sentinel chain.
func (e *FieldError) Unwrap() error { return e.Err }
