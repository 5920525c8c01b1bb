// Command darwincheck type-checks the module's darwin-only code on any host.
//
// Usage:
//
//	go run ./internal/tools/darwincheck [-v] [packages]
//
// The packages (default ./...) and their tests are selected as for
// GOOS=darwin GOARCH=arm64 CGO_ENABLED=1 and type-checked with go/types
// against the real source of every dependency, macdriver's Metal bindings
// included. Cgo is not run: references to package "C" are accepted unchecked.
// Errors in packages of the main module are printed as "file:line: message"
// and make the exit status 1; errors in the standard library and third-party
// modules are ignored (faking "C" makes noise there and we cannot fix them).
// Exit status 2 means the check could not run.
package main
