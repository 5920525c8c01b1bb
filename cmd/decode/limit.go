package main

import (
	"fmt"
	"os"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/predict"
)

// limit is the resource limit in force and where it came from.
type limit struct {
	n      int
	source string // "--limit", "INGOT_RESOURCE_LIMIT", "device" or "default"
}

// resolveLimit applies alloc.ResourceLimitFor (the one rule: --limit, else
// $INGOT_RESOURCE_LIMIT, else the device's limit, else the default) and names the
// source. A bad environment value is a usage error.
func resolveLimit(o *options, dev graph.Device) (limit, error) {
	explicit, device := 0, 0
	if o.set["limit"] {
		explicit = o.limit
	}
	if rl, ok := dev.(graph.ResourceLimiter); ok {
		device = rl.ResourceLimit()
	}
	n, err := alloc.ResourceLimitFor(explicit, device)
	if err != nil {
		return limit{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	l := limit{n: n, source: "default"}
	switch {
	case explicit > 0:
		l.source = "--limit"
	case envSet():
		l.source = alloc.ResourceLimitEnv
	case device > 0:
		l.source = "device"
	}
	return l, nil
}

// belowBaseline is the usage error for a limit the model cannot even start under.
func (l limit) belowBaseline(why string) error {
	name := map[string]string{"--limit": "--limit", "device": "the device's resource limit",
		"default": "the default resource limit"}[l.source]
	if name == "" {
		name = l.source
	}
	return fmt.Errorf("%w: %w", errUsage, &predict.BaselineError{Source: name, Limit: l.n, Why: why})
}

func envSet() bool {
	_, ok := os.LookupEnv(alloc.ResourceLimitEnv)
	return ok
}
