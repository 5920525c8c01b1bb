//go:build js && wasm

// Command engine is the playground's WebAssembly program. It runs in the page's Web
// Worker (static/worker.js), so the decode never blocks the page, and exposes three
// functions to it: ingotPredict(spec JSON) returns a prediction's JSON,
// ingotRun(spec JSON) starts the runs and posts each Update to the page as JSON, and
// ingotStop() interrupts the run in progress.
package main

import (
	"context"
	"encoding/json"
	"syscall/js"
	"time"

	"github.com/ingotml/ingot/cmd/playground/internal/play"
)

func main() {
	var cancel context.CancelFunc
	post := func(v any) {
		b, _ := json.Marshal(v)
		js.Global().Call("postMessage", string(b))
	}
	js.Global().Set("ingotPredict", js.FuncOf(func(_ js.Value, args []js.Value) any {
		var req struct {
			Model    play.ModelSpec `json:"model"`
			Limit    int            `json:"limit"`
			RunLimit int            `json:"run_limit"`
		}
		if err := json.Unmarshal([]byte(args[0].String()), &req); err != nil {
			return errJSON(err)
		}
		p, err := play.Predict(req.Model, req.Limit, req.RunLimit)
		if err != nil {
			return errJSON(err)
		}
		b, _ := json.Marshal(p)
		return string(b)
	}))
	js.Global().Set("ingotRun", js.FuncOf(func(_ js.Value, args []js.Value) any {
		var spec play.RunSpec
		if err := json.Unmarshal([]byte(args[0].String()), &spec); err != nil {
			post(play.Update{Type: "error", Error: err.Error()})
			return nil
		}
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		go func() {
			env := play.Env{
				Emit: func(u play.Update) { post(u) },
				// A sleep hands the worker's thread back to its event loop, where a Stop
				// message waits: Go's scheduler runs JavaScript only when every goroutine
				// is blocked.
				Yield:      func() { time.Sleep(time.Millisecond) },
				YieldEvery: 50 * time.Millisecond,
			}
			if err := play.Run(ctx, spec, env); err != nil {
				post(play.Update{Type: "error", Error: err.Error()})
			}
		}()
		return nil
	}))
	js.Global().Set("ingotStop", js.FuncOf(func(js.Value, []js.Value) any {
		if cancel != nil {
			cancel()
		}
		return nil
	}))
	post(map[string]string{"type": "ready"})
	select {}
}

func errJSON(err error) string {
	b, _ := json.Marshal(map[string]string{"error": err.Error()})
	return string(b)
}
