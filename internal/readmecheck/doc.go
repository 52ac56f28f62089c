// Package readmecheck holds the tests that keep README.md and the library
// page true: the Go program of docs/library.md is built and run in a fresh
// module outside the repository, as a user would, and its output compared
// with the one the page shows; the README's fit example is run and its
// output compared too; the README stays short and names commands that
// exist. The package has no code of its own.
package readmecheck
