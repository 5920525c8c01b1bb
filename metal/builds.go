package metal

import (
	"fmt"

	"github.com/ingotml/ingot/kernels"
)

// This file holds the background compile of every kernel family: NewGPU starts it
// and returns, the first dispatch of a family waits for that family alone, and
// GPU.Ready waits for all of them, so that a family that does not compile is found
// before the first token (the CLI asks Ready once its model is loaded). Plain Go over
// a compile function, so the tests drive it with slow and failing fakes.

// familyBuild is one family's compile: done is closed once lib or err is set.
type familyBuild struct {
	done chan struct{}
	lib  library
	err  error // a *CompileError
}

// familyBuilds is every family's compile, started together.
type familyBuilds struct {
	order []string // the families in name order (the order waitAll reports in)
	by    map[string]*familyBuild
}

// startBuilds compiles every family in the background with compile, at most par at
// once, and returns at once.
func startBuilds(families []string, par int, compile func(family, source string) (library, error)) *familyBuilds {
	s := &familyBuilds{order: families, by: make(map[string]*familyBuild, len(families))}
	for _, f := range families {
		s.by[f] = &familyBuild{done: make(chan struct{})}
	}
	sem := make(chan struct{}, max(par, 1))
	for _, f := range families {
		b := s.by[f]
		go func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			defer close(b.done)
			defer func() {
				// A panic in the compiler's binding fails the family, not the process.
				if p := recover(); p != nil {
					b.lib, b.err = nil, &CompileError{Family: f, Err: fmt.Errorf("compile panicked: %v", p)}
				}
			}()
			src, err := kernels.Source(f)
			if err == nil {
				b.lib, err = compile(f, src)
			}
			if err != nil {
				b.lib, b.err = nil, &CompileError{Family: f, Err: err}
			}
		}()
	}
	return s
}

// wait blocks until family's compile has finished and returns its result; ok is
// false when family is not one of the builds (it is then compiled on first use).
func (s *familyBuilds) wait(family string) (lib library, err error, ok bool) {
	if s == nil {
		return nil, nil, false
	}
	b, ok := s.by[family]
	if !ok {
		return nil, nil, false
	}
	<-b.done
	return b.lib, b.err, true
}

// finished reports whether family's compile has ended (false for an unknown family).
func (s *familyBuilds) finished(family string) bool {
	if s == nil {
		return false
	}
	b, ok := s.by[family]
	if !ok {
		return false
	}
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// waitAll blocks until every compile has finished and returns the first failure in
// family order, a *CompileError, or nil.
func (s *familyBuilds) waitAll() error {
	if s == nil {
		return nil
	}
	var first error
	for _, f := range s.order {
		if _, err, _ := s.wait(f); err != nil && first == nil {
			first = err
		}
	}
	return first
}
