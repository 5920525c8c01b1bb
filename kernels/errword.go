package kernels

import (
	"encoding/binary"
	"fmt"
)

// The device error word: how a Metal twin reports bad data in its inputs (an index out
// of range), which its Go twin reports by stopping with a *LaunchError. A batch owns one
// word, zeroed before the batch; Encode binds it with Encoder.ErrorWord, and the device
// reads it after the batch has completed. It is four uint32s, [0] and [1] updated by
// atomic_fetch_max (so a zero word means no fault, and no fault can be lost):
//
//	[0] ^position of the launch in its batch: the largest value, the earliest failing
//	    launch, wins (the CPU device stops at that launch too);
//	[1] ^element of the offending entry in that launch's index array: the first one in
//	    the Go twin's order wins;
//	[2] the index value itself, stored by the thread that improved [1];
//	[3] unused (keeps the word 16 bytes).
//
// Launches of a batch run one after another (one serial compute encoder per command
// buffer, a fence between command buffers), so a thread that finds an earlier launch's
// fault in [0] leaves [1] and [2] alone. Within a launch two threads with different
// offending entries may race between [1] and [2]; the value reported is then another
// out-of-range index of the same launch, so the message is still true.

// ErrorWordSize is the size in bytes of the device error word.
const ErrorWordSize = 16

// DeviceError decodes a batch's error word after the batch has completed: nil when the
// word is zero, otherwise the *LaunchError the Go twin of the launch it names would
// have stopped with. A word naming no launch of batch, or a kernel that does not
// report through the word, gives a LaunchError saying so.
func DeviceError(word []byte, batch []Launch) *LaunchError {
	if len(word) < ErrorWordSize {
		return &LaunchError{Kernel: "?", Msg: fmt.Sprintf("error word of %d bytes; want %d", len(word), ErrorWordSize)}
	}
	launch := binary.LittleEndian.Uint32(word[0:])
	if launch == 0 {
		return nil
	}
	pos := int(^launch)
	if pos < 0 || pos >= len(batch) || batch[pos].Kernel == nil {
		return &LaunchError{Kernel: "?", Msg: fmt.Sprintf("the error word names launch %d of a batch of %d", pos, len(batch))}
	}
	l := &batch[pos]
	value := int32(binary.LittleEndian.Uint32(word[8:]))
	if l.Kernel.IndexAxis == nil {
		return &LaunchError{Kernel: l.Kernel.Name, Msg: fmt.Sprintf("reported index %d, but the kernel has no index axis", value)}
	}
	return &LaunchError{Kernel: l.Kernel.Name, Msg: indexRangeMsg(value, l.Kernel.IndexAxis(l))}
}

// indexRangeMsg is the message of an out-of-range index, the same from both twins.
func indexRangeMsg(i int32, n int) string {
	return fmt.Sprintf("index %d out of range for an axis of length %d", i, n)
}
