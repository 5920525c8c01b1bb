package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to serve the playground on")
	out := flag.String("out", "", "write the static site to this folder and exit (to publish it with any web server)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "playground: unexpected arguments %q\n", flag.Args())
		os.Exit(64)
	}
	dir := *out
	if dir == "" {
		tmp, err := os.MkdirTemp("", "ingot-playground-")
		if err != nil {
			fmt.Fprintf(os.Stderr, "playground: %v\n", err)
			os.Exit(70)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	fmt.Fprintln(os.Stderr, "playground: building the engine (GOOS=js GOARCH=wasm)…")
	if err := buildSite(dir); err != nil {
		fmt.Fprintf(os.Stderr, "playground: %v\n", err)
		os.Exit(70)
	}
	if *out != "" {
		fmt.Printf("playground: wrote the static site to %s\n", dir)
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "playground: -addr: %v\n", err)
		os.Exit(64)
	}
	fmt.Printf("playground: serving on http://%s/ (Ctrl-C to stop)\n", ln.Addr())
	srv := &http.Server{Handler: handler(dir), ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintf(os.Stderr, "playground: %v\n", err)
		os.Exit(70)
	}
}

// handler serves the site in dir, never cached: a rebuilt engine is the one loaded.
func handler(dir string) http.Handler {
	files := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		files.ServeHTTP(w, r)
	})
}
