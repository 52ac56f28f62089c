// Package readmecheck holds the test that keeps README.md's library
// program true: it builds and runs the program in a fresh module outside
// the repository, as a user would, and compares its output with the one
// the README shows. The package has no code of its own.
package readmecheck
