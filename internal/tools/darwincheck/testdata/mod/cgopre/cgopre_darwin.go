//go:build darwin

// Package cgopre calls its preamble's C functions, twice wrongly.
package cgopre

/*
#include <stdint.h>
#include <stdlib.h>

static int ingot_two(int a, int b) {
	return a + b;
}

// ingot_none takes nothing.
static long ingot_none(void) { return 1; }
*/
import "C"

import "unsafe"

// Sum passes one argument to a function of two.
func Sum() int { return int(C.ingot_two(1)) }

// Three calls a function the preamble does not declare.
func Three() int { return int(C.ingot_three()) }

// Fine uses what the preamble and cgo provide.
func Fine() int64 {
	s := C.CString("x")
	defer C.free(unsafe.Pointer(s))
	var v C.int64_t = C.int64_t(C.ingot_none())
	return int64(v) + int64(C.ingot_two(1, 2))
}
