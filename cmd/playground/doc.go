// Command playground serves ingot's browser playground: the repro's engine compiled to
// WebAssembly, running in a Web Worker behind a page that predicts a model's crash
// (the same code as `decode --predict-only`) and runs the lazy, eager and
// attention-only decodes with a live chart.
//
//	go run ./cmd/playground                 # build the site, serve it on 127.0.0.1:8080
//	go run ./cmd/playground -addr 127.0.0.1:9000  # another address
//	go run ./cmd/playground -out site       # write the static site to ./site and exit
//
// It builds the engine (cmd/playground/engine) with GOOS=js GOARCH=wasm, copies the Go
// toolchain's wasm_exec.js beside it, and serves those with the page's own files
// (static/, embedded). The site is static: any web server can publish the -out folder.
// It loads nothing from elsewhere, so it works offline.
package main
