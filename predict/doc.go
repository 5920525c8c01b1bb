// Package predict holds the repro's arithmetic: the prediction of when a decode dies
// (the leak slope from the layer kinds and the path, the baseline of live buffers, the
// crash token) and the statistics that judge a measured run against it (the slope fit,
// the verdict and its exit code, the size-class drift, the host bytes per dead link).
//
// It takes plain inputs, not a model: whoever describes the model (a model package's
// description, a checkpoint's headers, a live run) passes its layer kinds and buffer
// counts. cmd/decode and the browser playground print the same lines from here.
package predict
