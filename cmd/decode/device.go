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
// (an old macOS, a GPU that is not Apple silicon), it says why in one [device] line on
// out, once a run (o.deviceNoted), and runs on the CPU; --device metal fails with the
// same reason (exit 69). A family that does not compile is found by deviceReady, once
// the model is loaded, with the same two outcomes.
func openDevice(o *options, out io.Writer) (graph.Device, string, error) {
	name := o.device
	if name == "cpu" || (name == "auto" && (o.metalRefused || !metalPresent())) {
		return graph.CPU(), "cpu", nil
	}
	gpu, err := newMetal()
	if err == nil {
		return gpu, "metal", nil
	}
	return refuseMetal(o, out, err)
}

// refuseMetal is openDevice's answer when Metal refused with err: the CPU (after one
// [device] line) under auto, else errNoDevice.
func refuseMetal(o *options, out io.Writer, err error) (graph.Device, string, error) {
	if o.device == "auto" {
		if !o.deviceNoted {
			o.deviceNoted = true
			fmt.Fprintf(out, "[device] Metal refused, running on the CPU: %v\n", err)
		}
		return graph.CPU(), "cpu", nil
	}
	return nil, "", fmt.Errorf("%w: --device %s: %v", errNoDevice, o.device, err)
}

// readier is metal.GPU's Ready: NewGPU returns while the kernel families compile in
// the background, and Ready waits for them, refusing the device if one failed.
type readier interface{ Ready() error }

// deviceReady is called once the model is on dev, before the first token: the model's
// load overlapped the kernels' compile, which it now waits for. When a family failed to
// compile, auto starts again on the CPU (retry, after the [device] line; later runs of
// the process skip Metal) and --device metal fails with errNoDevice (exit 69).
func deviceReady(o *options, dev graph.Device, out io.Writer) (retry bool, err error) {
	r, ok := dev.(readier)
	if !ok {
		return false, nil
	}
	if err := r.Ready(); err != nil {
		o.metalRefused = true
		if _, _, err := refuseMetal(o, out, err); err != nil {
			return false, err
		}
		return true, nil
	}
	return false, nil
}
