package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() { os.Exit(run()) }

// run is the command; it returns the exit code: 64 for a bad command line or address,
// 70 when the site cannot be built or served.
func run() int {
	addr := flag.String("addr", "127.0.0.1:8080", "address to serve the playground on")
	out := flag.String("out", "", "write the static site to this folder and exit (to publish it with any web server)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "playground: unexpected arguments %q\n", flag.Args())
		return 64
	}
	if *out != "" {
		if err := buildSite(*out); err != nil {
			fmt.Fprintf(os.Stderr, "playground: %v\n", err)
			return 70
		}
		fmt.Printf("playground: wrote the static site to %s\n", *out)
		return 0
	}
	// The address first: a bad one fails before the build.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "playground: -addr: %v\n", err)
		return 64
	}
	dir, err := os.MkdirTemp("", "ingot-playground-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "playground: %v\n", err)
		return 70
	}
	defer os.RemoveAll(dir)
	fmt.Fprintln(os.Stderr, "playground: building the engine (GOOS=js GOARCH=wasm)…")
	if err := buildSite(dir); err != nil {
		fmt.Fprintf(os.Stderr, "playground: %v\n", err)
		return 70
	}
	fmt.Printf("playground: serving on http://%s/ (Ctrl-C to stop)\n", ln.Addr())
	srv := &http.Server{Handler: handler(dir), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close() // then the deferred removal of the built site runs
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "playground: %v\n", err)
		return 70
	}
	return 0
}

// handler serves the site in dir, never cached: a rebuilt engine is the one loaded.
func handler(dir string) http.Handler {
	files := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		files.ServeHTTP(w, r)
	})
}
