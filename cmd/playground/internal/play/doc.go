// Package play is the browser playground's engine, kept free of syscall/js so that it
// builds and tests natively: it predicts a model's crash the way `decode
// --predict-only` does (package predict) and runs the repro's decode (package repro)
// while reporting samples, charts (package chart) and the census as Updates, which
// the WebAssembly glue posts to the page.
package play
