//go:build race

package pool_test

// raceOn reports a -race build: tests that only move large buffers skip.
const raceOn = true
