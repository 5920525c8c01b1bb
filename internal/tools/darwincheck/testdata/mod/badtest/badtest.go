// Package badtest is fine; only its darwin test is wrong.
package badtest

// Two returns 2.
func Two() int { return 2 }
