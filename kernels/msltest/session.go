package msltest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"
)

// Session is a running kernel program of one .metal file: each Run sends it a
// dispatch over a pipe, so a long sequence of launches (a model's decode
// steps) costs no process start each. A program that faults ends its run with
// a *RunError; the next Run starts a fresh one. A Session is safe for use by
// several goroutines (their runs take turns).
type Session struct {
	file string
	p    *program

	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *lockedBuffer
	done   chan struct{} // closed when cmd has exited; waitErr is then its status
	waitErr error
}

// Open compiles metalFile (or reuses its cached program) and returns a
// session on it; the program itself starts at the first Run.
func Open(metalFile string) (*Session, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	p, err := load(metalFile)
	if err != nil {
		return nil, err
	}
	return &Session{file: metalFile, p: p}, nil
}

var (
	sessionsMu sync.Mutex
	sessions   = map[*program]*Session{}
)

// sessionFor is the process-wide session of a file's current content, which
// Run shares.
func sessionFor(metalFile string) (*Session, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	p, err := load(metalFile)
	if err != nil {
		return nil, err
	}
	sessionsMu.Lock()
	defer sessionsMu.Unlock()
	s, ok := sessions[p]
	if !ok {
		s = &Session{file: metalFile, p: p}
		sessions[p] = s
	}
	return s, nil
}

// Kernels lists the file's entry points, sorted.
func (s *Session) Kernels() []string {
	var names []string
	for _, k := range s.p.kernels {
		names = append(names, k.name)
	}
	sort.Strings(names)
	return names
}

// BufferIndices returns the [[buffer(n)]] indices of kernel name's parameters,
// in declaration order.
func (s *Session) BufferIndices(name string) ([]int, error) {
	k, err := s.kernel(name)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, p := range k.params {
		if p.kind == paramBuffer {
			out = append(out, p.index)
		}
	}
	return out, nil
}

func (s *Session) kernel(name string) (*kernelSig, error) {
	for _, k := range s.p.kernels {
		if k.name == name {
			return k, nil
		}
	}
	return nil, fmt.Errorf("%w: %q in %s (it has: %s)", ErrKernelNotFound, name, s.file, strings.Join(s.Kernels(), ", "))
}

// Run runs kernel name over bufs, as the package-level Run does, in this
// session's program.
func (s *Session) Run(name string, d Dispatch, bufs []Buffer) error {
	mode, grid, group, err := d.normalize()
	if err != nil {
		return err
	}
	k, err := s.kernel(name)
	if err != nil {
		return err
	}
	flags, err := checkBuffers(k, bufs)
	if err != nil {
		return err
	}
	req := encodeRequest(name, mode, grid, group, d, bufs, flags)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.start(); err != nil {
		return err
	}
	resp, err := s.exchange(req)
	if err != nil {
		return &RunError{File: s.file, Kernel: name, Output: s.stop(), Err: err}
	}
	if err := decodeResponse(resp, bufs); err != nil {
		return fmt.Errorf("msltest: result of kernel %s: %w", name, err)
	}
	return nil
}

// exchange sends one request and reads its reply, giving up after runTimeout.
func (s *Session) exchange(req []byte) ([]byte, error) {
	type result struct {
		resp []byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		var n [4]byte
		binary.LittleEndian.PutUint32(n[:], uint32(len(req)))
		if _, err := s.stdin.Write(append(n[:], req...)); err != nil {
			ch <- result{nil, err}
			return
		}
		if _, err := io.ReadFull(s.stdout, n[:]); err != nil {
			ch <- result{nil, err}
			return
		}
		resp := make([]byte, binary.LittleEndian.Uint32(n[:]))
		_, err := io.ReadFull(s.stdout, resp)
		ch <- result{resp, err}
	}()
	timer := time.NewTimer(runTimeout)
	defer timer.Stop()
	select {
	case r := <-ch:
		if r.err != nil {
			<-s.done // the program died: report how
			if s.waitErr != nil {
				return nil, s.waitErr
			}
			return nil, r.err
		}
		return r.resp, nil
	case <-timer.C:
		s.cmd.Process.Kill()
		<-ch
		return nil, fmt.Errorf("no result after %v", runTimeout)
	}
}

// start runs the program if it is not running.
func (s *Session) start() error {
	if s.cmd != nil {
		return nil
	}
	if err := verify(s.p.exe, s.p.sum); err != nil {
		return err
	}
	cmd := exec.Command(s.p.exe, "serve")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("msltest: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("msltest: %w", err)
	}
	s.stderr = &lockedBuffer{}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("msltest: starting the kernel program of %s: %w", s.file, err)
	}
	s.cmd, s.stdin, s.stdout = cmd, stdin, bufio.NewReaderSize(stdout, 1<<16)
	s.done = make(chan struct{})
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	return nil
}

// stop ends the program (it has failed) and returns what it reported.
func (s *Session) stop() string {
	if s.cmd == nil {
		return ""
	}
	s.stdin.Close()
	s.cmd.Process.Kill()
	<-s.done
	out := strings.TrimSpace(s.stderr.String())
	s.cmd = nil
	return out
}

// Close ends the session's program.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stop()
	return nil
}

// lockedBuffer collects a program's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
