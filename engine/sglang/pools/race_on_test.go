//go:build race

package pools_test

// raceOn reports a -race build: tests that only move large buffers skip.
const raceOn = true
