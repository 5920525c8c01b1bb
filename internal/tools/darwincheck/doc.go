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
//
// Two checks go beyond the type checker. An objc.Call result narrower than a
// register (objc.Call[bool], or a generated macdriver wrapper returning one) is
// reported: libffi writes 8 bytes into the Go value. And each cgo file's C side is
// checked as far as text allows: every C.name must be cgo's own, a standard C type,
// or declared in that file's preamble, and a call of a function the preamble
// defines must pass as many arguments as it takes.
package main
