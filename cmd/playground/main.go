package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Exit codes: 0 served (until stopped) or written, 64 a bad command line, address or
// -out path, 70 the site could not be built or served, 128+n stopped by signal n while
// building (130 for SIGINT, 143 for SIGTERM).
const (
	exitOK      = 0
	exitUsage   = 64
	exitFailure = 70
	// exitStopped is run's code for a build stopped by a signal; main makes it 128+n.
	exitStopped = -1
)

func main() {
	// One handler owns the whole run: a signal stops the build (and removes what it
	// wrote) or the server, never the process half-way.
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	var sig os.Signal
	stopped := make(chan struct{})
	go func() {
		sig = <-sigs
		close(stopped)
		cancel()
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if code == exitStopped {
		<-stopped
		fmt.Fprintf(os.Stderr, "playground: %v: stopped\n", sig)
		code = 128 + int(sig.(syscall.Signal))
	}
	os.Exit(code)
}

// run is the command; it returns the exit code. ctx is cancelled by a signal: the
// build stops and its files are removed (exitStopped), or the server closes (0).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("playground", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "address to serve the playground on (host:port; a host other than loopback is reachable from other machines)")
	out := fs.String("out", "", "write the static site to this folder and exit (to publish it with any web server)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "playground: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	if *out != "" {
		if err := checkOut(*out); err != nil {
			fmt.Fprintf(stderr, "playground: -out %s: %v\n", *out, err)
			return exitUsage
		}
		if err := buildSite(ctx, *out); err != nil {
			if ctx.Err() != nil {
				return exitStopped
			}
			fmt.Fprintf(stderr, "playground: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(stdout, "playground: wrote the static site to %s\n", *out)
		return exitOK
	}
	// The address first: a bad one fails before the build.
	if err := checkAddr(*addr, stderr); err != nil {
		fmt.Fprintf(stderr, "playground: -addr: %v\n", err)
		return exitUsage
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "playground: -addr: %v\n", err)
		return exitUsage
	}
	defer ln.Close()
	dir, err := os.MkdirTemp("", "ingot-playground-")
	if err != nil {
		fmt.Fprintf(stderr, "playground: %v\n", err)
		return exitFailure
	}
	defer os.RemoveAll(dir)
	fmt.Fprintln(stderr, "playground: building the engine (GOOS=js GOARCH=wasm)…")
	if err := buildSite(ctx, dir); err != nil {
		if ctx.Err() != nil {
			return exitStopped // the deferred removal runs first
		}
		fmt.Fprintf(stderr, "playground: %v\n", err)
		return exitFailure
	}
	if ctx.Err() != nil {
		return exitStopped
	}
	fmt.Fprintf(stdout, "playground: serving on http://%s/ (Ctrl-C to stop)\n", ln.Addr())
	srv := newServer(handler(dir))
	go func() {
		<-ctx.Done()
		srv.Close() // then the deferred removal of the built site runs
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "playground: %v\n", err)
		return exitFailure
	}
	return exitOK
}

// checkAddr refuses an empty address (net.Listen would take every interface and a
// random port, silently) and warns when the host is not loopback: the page and the
// engine are then served to every machine that can reach this one.
func checkAddr(addr string, stderr io.Writer) error {
	if addr == "" {
		return errors.New(`empty: give host:port, such as 127.0.0.1:8080`)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if !loopback(host) {
		shown := host
		if shown == "" {
			shown = "every interface"
		}
		fmt.Fprintf(stderr, "playground: warning: -addr %s listens on %s, not loopback: other machines can reach the playground (use 127.0.0.1:PORT to keep it local)\n", addr, shown)
	}
	return nil
}

// loopback reports whether host names only this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkOut refuses an -out path that cannot be the site's folder: a file, or a
// folder that cannot be created.
func checkOut(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return errors.New("exists and is not a directory")
	case err == nil:
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return unwrapPath(err)
	}
	return unwrapPath(os.MkdirAll(dir, 0o755))
}

// unwrapPath drops the *PathError's repetition of the path the message names.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// The server's limits: a client that sends its request slowly, never finishes a body,
// or keeps an idle connection open is cut off; the site's files are small.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 60 * time.Second // ingot.wasm is a few MB
	idleTimeout       = 30 * time.Second
	maxHeaderBytes    = 2 << 20 // a 1 MB URL still reaches the handler, which answers 414
)

// newServer is the playground's HTTP server for h, with the limits above.
func newServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes}
}

// maxURL is the longest request target answered; a longer one gets 414.
const maxURL = 8 << 10

// handler serves the site in dir, never cached: a rebuilt engine is the one loaded.
// Only GET and HEAD are answered (405 otherwise); a directory is served only through
// its index.html (no listing); a name the file system refuses (too long, say) is
// 404, not 500.
func handler(dir string) http.Handler {
	files := http.FileServer(siteFS{http.Dir(dir)})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		switch {
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
			return
		case len(r.RequestURI) > maxURL:
			http.Error(w, "414 URI too long", http.StatusRequestURITooLong)
			return
		}
		files.ServeHTTP(w, r)
	})
}

// siteFS is the site's files: an error other than a permission error is "not found"
// (http.FileServer answers 500 to ENAMETOOLONG), and a directory without an
// index.html is not found either (no listing).
type siteFS struct{ fs http.FileSystem }

func (s siteFS) Open(name string) (http.File, error) {
	f, err := s.fs.Open(name)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, err
		}
		return nil, os.ErrNotExist
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, os.ErrNotExist
	}
	if st.IsDir() {
		index, err := s.fs.Open(name + "/index.html")
		if err != nil {
			f.Close()
			return nil, os.ErrNotExist
		}
		index.Close()
	}
	return f, nil
}
