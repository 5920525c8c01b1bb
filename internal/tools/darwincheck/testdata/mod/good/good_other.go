//go:build !darwin

package good

// This file is not part of the darwin build, so its error must not be
// reported.
var notDarwin int = "not an int"
