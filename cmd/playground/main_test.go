//go:build !js

package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/internal/childtest"
	"github.com/ingotml/ingot/nn/models"
)

// childEnv makes the test binary run the command (see TestMain) with these arguments.
const childEnv = "PLAYGROUND_TEST_CHILD_ARGS"

func runCmd(ctx context.Context, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// stoppedCtx is a context already cancelled, as after a signal.
func stoppedCtx() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// TestAddrChecked: an empty -addr is refused (it listened on every interface and a
// random port, silently); an address that is not loopback is served with a warning.
func TestAddrChecked(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	code, _, errs := runCmd(context.Background(), "-addr", "")
	require.Equal(t, exitUsage, code)
	require.Equal(t, "playground: -addr: empty: give host:port, such as 127.0.0.1:8080\n", errs)
	for addr, warn := range map[string]string{
		"0.0.0.0:0":   "playground: warning: -addr 0.0.0.0:0 listens on 0.0.0.0, not loopback: other machines can reach the playground (use 127.0.0.1:PORT to keep it local)\n",
		":0":          "playground: warning: -addr :0 listens on every interface, not loopback: ",
		"127.0.0.1:0": "",
		"localhost:0": "",
		"[::1]:0":     "",
	} {
		// A cancelled context: the command stops at the build, as on a signal.
		code, _, errs := runCmd(stoppedCtx(), "-addr", addr)
		require.Equal(t, exitStopped, code, errs)
		if warn == "" {
			require.NotContains(t, errs, "warning", addr)
		} else {
			require.True(t, strings.HasPrefix(errs, warn), "%s: %s", addr, errs)
		}
	}
	entries, err := os.ReadDir(os.Getenv("TMPDIR"))
	require.NoError(t, err)
	require.Empty(t, entries, "the stopped builds left nothing")
}

// TestOutChecked: an -out that cannot be the site's folder is a usage error (64), as
// decode's outputs are, not a failure (70).
func TestOutChecked(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	code, _, errs := runCmd(context.Background(), "-out", file)
	require.Equal(t, exitUsage, code)
	require.Equal(t, "playground: -out "+file+": exists and is not a directory\n", errs)
	code, _, errs = runCmd(context.Background(), "-out", filepath.Join(file, "site"))
	require.Equal(t, exitUsage, code)
	require.Equal(t, "playground: -out "+filepath.Join(file, "site")+": not a directory\n", errs)
}

// testSite is a site folder with the page and one config, without the engine.
func testSite(t *testing.T) string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "index.html"), []byte("<p>page</p>"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "configs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "configs", "index.json"), []byte(`["x"]`), 0o644))
	return dir
}

// TestHandlerAnswers: GET and HEAD only (405 otherwise), no directory listing, 404 for
// a name too long for the file system (it was 500), 414 for a long URL, 431 for one
// past the header limit.
func TestHandlerAnswers(t *testing.T) {
	srv := httptest.NewUnstartedServer(handler(testSite(t)))
	srv.Config = newServer(srv.Config.Handler)
	srv.Start()
	defer srv.Close()
	status := func(method, path string) int {
		req, err := http.NewRequest(method, srv.URL+path, nil)
		require.NoError(t, err)
		res, err := srv.Client().Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	require.Equal(t, 200, status("GET", "/"))
	require.Equal(t, 200, status("HEAD", "/"))
	require.Equal(t, 200, status("GET", "/configs/index.json"))
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS"} {
		require.Equal(t, 405, status(m, "/"), m)
	}
	require.Equal(t, 404, status("GET", "/configs/"), "no listing")
	require.Equal(t, 404, status("GET", "/"+strings.Repeat("a", 256)))
	require.Equal(t, 404, status("GET", "/nothing.js"))
	require.Equal(t, 414, status("GET", "/"+strings.Repeat("a", 9000)))
	require.Equal(t, 414, status("GET", "/?"+strings.Repeat("a", 1<<20)), "audit 3: a 1 MB URL")
	require.Equal(t, 431, status("GET", "/?"+strings.Repeat("a", 3<<20)))
}

// TestServerTimeouts: the server has read, header, write and idle timeouts and a
// header limit; a client that never finishes its body is cut off (200 such
// connections were held 40 s without a reply).
func TestServerTimeouts(t *testing.T) {
	s := newServer(http.NotFoundHandler())
	require.Equal(t, 5*time.Second, s.ReadHeaderTimeout)
	require.Equal(t, 10*time.Second, s.ReadTimeout)
	require.Equal(t, 60*time.Second, s.WriteTimeout)
	require.Equal(t, 30*time.Second, s.IdleTimeout)
	require.Equal(t, 2<<20, s.MaxHeaderBytes)

	// The same server with the read timeout shortened: a body never sent.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s = newServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	s.ReadTimeout, s.ReadHeaderTimeout, s.IdleTimeout = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	go s.Serve(ln)
	defer s.Close()
	for _, req := range []string{
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nshort",
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
		"", // an idle connection
	} {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		_, err = c.Write([]byte(req))
		require.NoError(t, err)
		start := time.Now()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		io.Copy(io.Discard, c) // until the server closes the connection
		require.Less(t, time.Since(start), 5*time.Second, "%q", req)
		c.Close()
	}
}

// TestEveryModelTypeListed: the page's model types are every registered one (qwen3 was
// missing).
func TestEveryModelTypeListed(t *testing.T) {
	page, err := static.ReadFile("static/index.html")
	require.NoError(t, err)
	sel := string(page)
	sel = sel[strings.Index(sel, `<select id="model-type">`):]
	sel = sel[:strings.Index(sel, "</select>")]
	var listed []string
	for _, part := range strings.Split(sel, `<option value="`)[1:] {
		listed = append(listed, part[:strings.Index(part, `"`)])
	}
	want := models.Types()
	require.ElementsMatch(t, want, listed)
}

// TestInterruptDuringBuild: SIGINT or SIGTERM while the engine is built stops the
// build, removes the temporary site, and exits 128+n (it left
// /tmp/ingot-playground-*).
func TestInterruptDuringBuild(t *testing.T) {
	for _, sig := range childtest.Stops {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			c := childtest.Start(t, true, []string{childEnv + "=-addr 127.0.0.1:0", "TMPDIR=" + tmp}, os.Args[0])
			c.Until(t, time.Minute, func(l string) bool { return strings.Contains(l, "building the engine") })
			time.Sleep(300 * time.Millisecond) // inside go build
			c.Signal(t, sig)
			code, out := c.Exit(t, 2*time.Minute)
			require.Equal(t, 128+int(sig), code, out)
			seen := c.Lines()
			require.Contains(t, seen, "playground: "+sig.String()+": stopped")
			entries, err := os.ReadDir(tmp)
			require.NoError(t, err)
			for _, e := range entries {
				require.False(t, strings.HasPrefix(e.Name(), "ingot-playground-"), "left %s", e.Name())
			}
		})
	}
}
