package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/metal"
)

// errNoDevice marks --device metal on a machine without Metal (exit 69).
var errNoDevice = errors.New("device unavailable")

// metalPresent and newMetal are the Metal calls openDevice makes; the tests replace
// them with fakes whose refusals come from metal.Accept, as NewGPU's do.
var (
	metalPresent = metal.Available
	newMetal     = func() (graph.Device, error) {
		g, err := metal.NewGPU(metal.GPUOptions{})
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return g, nil
	}
)

// openDevice picks the device: cpu, metal, or auto (Metal when there is a device and
// NewGPU accepts it, else the CPU). When auto finds a Metal device that NewGPU refuses
// (an old macOS, a GPU that is not Apple silicon, a family that does not compile), it
// says why in one [device] line on out, once a run (o.deviceNoted), and runs on the
// CPU; --device metal fails with the same reason (exit 69).
func openDevice(o *options, out io.Writer) (graph.Device, string, error) {
	name := o.device
	if name == "cpu" || (name == "auto" && !metalPresent()) {
		return graph.CPU(), "cpu", nil
	}
	gpu, err := newMetal()
	if err == nil {
		return gpu, "metal", nil
	}
	if name == "auto" {
		if !o.deviceNoted {
			o.deviceNoted = true
			fmt.Fprintf(out, "[device] Metal refused, running on the CPU: %v\n", err)
		}
		return graph.CPU(), "cpu", nil
	}
	return nil, "", fmt.Errorf("%w: --device %s: %v", errNoDevice, name, err)
}
