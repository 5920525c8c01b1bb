// The engine's Web Worker: it loads ingot.wasm and forwards the page's messages to the
// functions the Go program exposes (cmd/playground/engine). Go posts its own updates
// to the page as JSON strings.
importScripts('wasm_exec.js');
const go = new Go();
let ready = false;
const pending = [];

function handle(m) {
  switch (m.type) {
    case 'predict':
      postMessage(JSON.stringify({ type: 'prediction', id: m.id, result: JSON.parse(ingotPredict(JSON.stringify(m.req))) }));
      break;
    case 'run':
      ingotRun(JSON.stringify(m.spec));
      break;
    case 'stop':
      ingotStop();
      break;
  }
}

self.onmessage = (e) => (ready ? handle(e.data) : pending.push(e.data));

WebAssembly.instantiateStreaming(fetch('ingot.wasm'), go.importObject)
  .then((r) => {
    go.run(r.instance); // returns once main blocks: the functions are defined
    ready = true;
    pending.splice(0).forEach(handle);
  })
  .catch((err) => postMessage(JSON.stringify({ type: 'error', error: 'could not load ingot.wasm: ' + err })));
