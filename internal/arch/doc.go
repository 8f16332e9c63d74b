// Package arch holds the repository's architecture test: dependencies point
// down, cmd -> lab -> compose, dockerfiles, datasets, workspace -> internal,
// and nothing below cmd prints or exits. It has no code of its own; the test
// reads the real import graph from `go list -json ./...`.
package arch
