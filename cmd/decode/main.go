package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"syscall"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/kernels"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command, testable: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "decode: %v\n", err)
		return exitUsage
	}
	if o.text.run, err = prepareText(o, stderr); err != nil {
		fmt.Fprintf(stderr, "decode: %v\n", err)
		return exitCodeOf(err)
	}
	if o.text.run != nil {
		// Text out: the generated text alone on stdout, the report on stderr.
		o.text.run.out, stdout = stdout, stderr
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// The lazy run's graph grows to hundreds of MB and no sample forces a
		// collection (graph.Options.ExplicitRelease): the collector works harder as
		// the heap nears the CPU device's working set, rather than let its headroom
		// take the machine's memory. GOMEMLIMIT in the environment wins.
		debug.SetMemoryLimit(alloc.CPUProvider().RecommendedWorkingSet())
	}
	if o.cpuProfile == "" {
		return runChecked(o, args, stdout, stderr)
	}
	// The profile is written beside its path and renamed over it only when the run
	// gets a verdict: a refused or failed run leaves an existing file as it was, and a
	// write error is reported, not lost.
	f, err := createOut(o.cpuProfile)
	if err != nil {
		fmt.Fprintf(stderr, "decode: --cpuprofile %s: %v\n", o.cpuProfile, err)
		return exitUsage
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.abort()
		fmt.Fprintf(stderr, "decode: --cpuprofile %s: %v\n", o.cpuProfile, err)
		return exitFailure
	}
	code := runChecked(o, args, stdout, stderr)
	pprof.StopCPUProfile()
	if code == exitUsage || code == exitNoDev || code == exitFailure {
		f.abort()
		return code
	}
	if err := f.commit(); err != nil {
		fmt.Fprintf(stderr, "decode: --cpuprofile %s: %v\n", o.cpuProfile, err)
		return exitFailure
	}
	return code
}

// runChecked is the command once its flags are read: the prediction or the runs, the
// report and the outputs.
func runChecked(o *options, args []string, stdout, stderr io.Writer) int {
	var err error
	if o.predictOnly {
		if err := predictOnly(o, stdout); err != nil {
			fmt.Fprintf(stderr, "decode: %v\n", err)
			return exitCodeOf(err)
		}
		return exitFlat
	}
	if o.disableCompile {
		fmt.Fprintln(stdout, "[note] --disable-compile: ingot has no mx.compile, nothing to disable")
	}
	if i8, bf := kernels.FastPromptPaths(); o.fastPrompts && !(i8 && bf) {
		fmt.Fprintf(stdout, "[note] --fast-prompts: this CPU has AVX512-VNNI %v, AVX512_BF16 %v: a format without its instructions keeps the float path\n", i8, bf)
	}
	// An interrupt stops the run at its next step; the report is still printed and
	// written. A second interrupt kills the process as usual.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }()
	specs := []runSpec{{label: o.cache.String(), policy: o.cache, attentionOnly: o.attentionOnly}}
	if o.compare {
		specs = []runSpec{
			{label: "lazy (stock mlx-lm bookkeeping)", policy: cache.Lazy},
			{label: "eager (host-integer fix)", policy: cache.Eager},
			{label: "attention-only (control)", policy: cache.Lazy, attentionOnly: true},
		}
		if o.modelDir != "" {
			// A checkpoint's layers are what they are: there is no attention-only twin.
			specs = specs[:2]
			fmt.Fprintln(stdout, "[note] --compare with --model: lazy and eager only (a checkpoint has no attention-only control)")
		}
	}
	prog := newProgress(stdout)
	defer prog.clear()
	var results []*result
	code := exitFlat
	for i, spec := range specs {
		if ctx.Err() != nil {
			break
		}
		if o.compare {
			fmt.Fprintf(stdout, "=== %s\n", spec.label)
		}
		var r *result
		if o.mode == "server" {
			r, err = serverRun(ctx, o, spec, stdout, prog)
		} else {
			r, err = decodeRun(ctx, o, spec, stdout, prog)
		}
		if err != nil {
			fmt.Fprintf(stderr, "decode: %v\n", err)
			return exitCodeOf(err)
		}
		if r.Interrupted {
			fmt.Fprintf(stdout, "[interrupted] stopped at token %s; the verdict below is for the run so far\n", comma(len(r.Tokens)))
		}
		printReport(stdout, r, o.failSlope)
		if i == 0 {
			code = eosExitCode(r, r.Verdict(o.failSlope).ExitCode())
		}
		results = append(results, r)
	}
	if o.compare && o.mode != "server" && len(results) >= 2 {
		printSameTokens(stdout, results[0], results[1])
	}
	if ctx.Err() != nil {
		code = exitInterrupt
	}
	if o.plot != "" && len(results) > 0 {
		if err := writePlot(o.plot, results); err != nil {
			fmt.Fprintf(stderr, "decode: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(stdout, "[plot] wrote %s\n", o.plot)
	}
	if o.jsonOut != "" && len(results) > 0 {
		j := jsonOf(results[0], append([]string{"decode"}, args...), o.failSlope)
		o.text.run.addJSON(&j, results[0])
		if o.compare {
			for _, r := range results[1:] {
				j.Runs = append(j.Runs, jsonOf(r, nil, o.failSlope))
			}
		}
		if err := writeJSON(o.jsonOut, j); err != nil {
			fmt.Fprintf(stderr, "decode: %v\n", err)
			return exitFailure
		}
	}
	return code
}

// printSameTokens says whether the lazy and eager runs emitted the same tokens (the
// policies differ in bookkeeping only), over the tokens both emitted.
func printSameTokens(out io.Writer, lazy, eager *result) {
	n := min(len(lazy.Tokens), len(eager.Tokens))
	for i := 0; i < n; i++ {
		if lazy.Tokens[i] != eager.Tokens[i] {
			fmt.Fprintf(out, "[compare] lazy and eager tokens DIFFER at token %s (%d vs %d)\n", comma(i), lazy.Tokens[i], eager.Tokens[i])
			return
		}
	}
	fmt.Fprintf(out, "[compare] lazy and eager emitted the same %s tokens\n", comma(n))
}

// exitCodeOf is the exit code of a run that failed with err: bad input (64), no Metal
// device (69), anything else (70).
func exitCodeOf(err error) int {
	switch {
	case errors.Is(err, errUsage):
		return exitUsage
	case errors.Is(err, errNoDevice):
		return exitNoDev
	}
	return exitFailure
}
