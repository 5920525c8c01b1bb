package main

import (
	"errors"
	"fmt"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/metal"
)

// errNoDevice marks --device metal on a machine without Metal (exit 69).
var errNoDevice = errors.New("device unavailable")

// openDevice picks the device: cpu, metal, or auto (Metal when available).
func openDevice(name string) (graph.Device, string, error) {
	if name == "cpu" || (name == "auto" && !metal.Available()) {
		return graph.CPU(), "cpu", nil
	}
	gpu, err := metal.NewGPU(metal.GPUOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("%w: --device %s: %v", errNoDevice, name, err)
	}
	return gpu, "metal", nil
}
