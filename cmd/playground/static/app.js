// The playground page: the form, the prediction, the live run. The engine runs in a
// Web Worker (worker.js), so the page stays responsive while it decodes.
'use strict';
const $ = (id) => document.getElementById(id);
// workers[0] predicts and runs; side by side, run i has workers[i] to itself (a
// browser gives each worker its own thread, so the runs share the machine's cores).
const workers = [];
function workerFor(i) {
  while (workers.length <= i) {
    const w = new Worker('worker.js');
    const idx = workers.length;
    w.onmessage = (e) => onMessage(JSON.parse(e.data), idx);
    workers.push(w);
  }
  return workers[i];
}
const worker = workerFor(0);
const comma = (n) => Math.round(n).toLocaleString('en-US');

// What the page has seen, for the browser tests (and the curious, in the console).
window.ingotState = { ready: false, prediction: null, done: [], ended: false, error: '' };

let predictId = 0;
let running = false;
let sideBySide = false; // the run in progress is side by side
let active = 0; // workers whose runs have not ended
let progress = [];
let statuses = [];
let censusSites = [];
let hists = [];
let histShown = null;

// showHist shows run i's size-class histogram, with a button per run to switch.
function showHist(i) {
  histShown = i;
  $('hist-tabs').replaceChildren(...hists.map((h, j) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = h.label;
    b.className = j === i ? 'tab on' : 'tab';
    b.onclick = () => showHist(j);
    return b;
  }));
  $('hist').innerHTML = hists[i].svg;
}

function modelSpec() {
  return {
    model_type: $('model-type').value,
    layers: +$('layers').value,
    interval: +$('interval').value,
    experts: +$('experts').value,
    hidden: +$('hidden').value,
    config: $('config').value,
  };
}

function selectedRuns() {
  const runs = [];
  if ($('run-lazy').checked) runs.push('lazy');
  if ($('run-eager').checked) runs.push('eager');
  if ($('run-attn').checked) runs.push('attention-only');
  return runs;
}

// cliLine is the same run as a cmd/decode command line.
function cliLine() {
  const m = modelSpec();
  const a = ['go run ./cmd/decode'];
  if (m.config.trim()) {
    a.push('--config config.json --hidden 64');
  } else {
    if (m.model_type !== 'qwen3_5_moe') a.push('--model-type ' + m.model_type);
    if (m.layers !== 50) a.push('--layers ' + m.layers);
    if (m.interval) a.push('--interval ' + m.interval);
    if (m.experts !== 8 && m.model_type !== 'qwen3_5') a.push('--experts ' + m.experts);
    if (m.hidden !== 64) a.push('--hidden ' + m.hidden);
  }
  const runs = selectedRuns();
  if (runs.length === 3) a.push('--compare');
  else if (runs.length === 1 && runs[0] === 'eager') a.push('--cache eager');
  else if (runs.length === 1 && runs[0] === 'attention-only') a.push('--attention-only');
  a.push('--tokens ' + $('tokens').value, '--limit ' + $('limit').value);
  if ($('census').checked) a.push('--census');
  return a.join(' ');
}

function predict() {
  const m = modelSpec();
  $('shape').disabled = m.config.trim() !== '';
  $('cli').textContent = cliLine();
  worker.postMessage({ type: 'predict', id: ++predictId, req: { model: m, limit: 499000, run_limit: +$('limit').value } });
}

function showPrediction(p) {
  window.ingotState.prediction = p;
  if (p.error) {
    $('predict-out').textContent = 'error: ' + p.error;
    $('structure').textContent = '';
    return;
  }
  $('predict-out').textContent = p.text;
  const mlp = p.experts > 0 ? p.experts + ' experts' : 'dense MLPs';
  const quant = p.quantized ? 'quantized ' + p.quantized : 'not quantized';
  const crash = p.crash > 0
    ? `crash near token <b>${comma(p.crash)}</b> at MLX's limit 499,000; at this page's limit ${comma(p.run_limit)}: token <b>${comma(p.run_crash)}</b>`
    : 'no leak: it never crashes';
  $('structure').innerHTML = `${p.model_type}: ${p.layers} layers (${p.gdn} GDN, ${p.attention} attention), ${mlp}, ${quant}. ` +
    `Slope ${p.slope} objects/token, baseline ${comma(p.baseline)} live buffers: ${crash}.`;
}

function setRunning(on) {
  running = on;
  $('run').disabled = on || !window.ingotState.ready;
  $('stop').disabled = !on;
}

function run() {
  const runs = selectedRuns();
  if (runs.length === 0) return;
  window.ingotState.done = [];
  window.ingotState.ended = false;
  window.ingotState.error = '';
  $('log').textContent = '';
  $('crash').hidden = true;
  $('census-site').textContent = '';
  censusSites = [];
  hists = [];
  histShown = null;
  $('status').textContent = 'starting…';
  setRunning(true);
  const spec = (rs) => ({ model: modelSpec(), runs: rs, tokens: +$('tokens').value, limit: +$('limit').value, census: $('census').checked });
  sideBySide = $('side-by-side').checked && runs.length > 1;
  progress = runs.map(() => 0);
  statuses = runs.map(() => '');
  $('chart').replaceChildren();
  $('chart').className = sideBySide ? 'chart sbs' : 'chart';
  if (sideBySide) {
    for (let i = 0; i < runs.length; i++) {
      $('chart').append(document.createElement('div'));
      workerFor(i).postMessage({ type: 'run', spec: spec([runs[i]]) });
    }
    active = runs.length;
  } else {
    worker.postMessage({ type: 'run', spec: spec(runs) });
    active = 1;
  }
}

function stop() {
  $('status').textContent += ' — stopping…';
  for (const w of workers) w.postMessage({ type: 'stop' });
}

function appendLog(s) {
  if (!s) return;
  const log = $('log');
  log.textContent += s;
  log.scrollTop = log.scrollHeight;
}

function showUpdate(u) {
  const runs = selectedRuns().length;
  if (u.chart) (sideBySide ? $('chart').children[u.run] : $('chart')).innerHTML = u.chart;
  if (u.hist) {
    hists[u.run] = { label: u.label, svg: u.hist };
    if (histShown === null || histShown === u.run - 1 || histShown === u.run) showHist(u.run);
  }
  if (u.census) {
    censusSites[u.run] = `${u.label}: ${u.census}`;
    $('census-site').textContent = 'census, the steepest growing site of each run:\n' + censusSites.filter(Boolean).join('\n');
  }
  appendLog(u.log);
  const end = u.predicted > 0 ? Math.min(u.predicted, u.total) : u.total;
  if (!sideBySide) for (let i = 0; i < u.run; i++) progress[i] = 1; // one after another
  progress[u.run] = Math.min(u.tokens / end, 1);
  $('progress').value = progress.reduce((a, b) => a + b, 0) / runs;
  let s = `${u.label}: ${comma(u.tokens)} tokens, ${comma(u.tok_per_s)} tok/s, ${comma(u.live)} live buffers`;
  if (u.predicted > 0) s += `, predicted crash at ${comma(u.predicted)}`;
  if (u.type === 'done') {
    window.ingotState.done.push(u);
    if (u.crashed) {
      $('crash').hidden = false;
      $('crash').textContent = `${u.crash_error}  (${u.label}, token ${comma(u.crash_token)})`;
      s = `${u.label}: CRASHED at token ${comma(u.crash_token)} (${comma(u.tok_per_s)} tok/s)`;
    } else if (u.interrupted) {
      s = `${u.label}: interrupted at token ${comma(u.tokens)}; the verdict is for the run so far (${u.verdict})`;
    } else {
      s = `${u.label}: ${u.verdict}, ${u.slope >= 0 ? '+' : ''}${u.slope.toFixed(2)} live buffers/token over ${comma(u.tokens)} tokens (${comma(u.tok_per_s)} tok/s)`;
    }
  }
  statuses[u.run] = s;
  $('status').textContent = sideBySide ? statuses.filter(Boolean).join('\n') : s;
}

// onMessage handles worker i's message m.
function onMessage(m, i) {
  if (sideBySide && m.run !== undefined) m.run = i; // each side-by-side worker runs one
  switch (m.type) {
    case 'ready':
      if (i > 0) break;
      window.ingotState.ready = true;
      setRunning(false);
      break;
    case 'prediction':
      if (m.id === predictId) showPrediction(m.result);
      break;
    case 'sample':
    case 'progress':
    case 'done':
      showUpdate(m);
      break;
    case 'end':
      if (--active > 0) break;
      window.ingotState.ended = true;
      setRunning(false);
      if (!window.ingotState.done.some((d) => d.interrupted)) $('progress').value = 1;
      break;
    case 'error':
      window.ingotState.error = m.error;
      window.ingotState.ended = true;
      $('status').textContent = 'error: ' + m.error;
      if (running) for (const w of workers) w.postMessage({ type: 'stop' });
      setRunning(false);
      break;
  }
}

// Presets from the address: ?layers=12&limit=8000&tokens=1000&runs=lazy,eager&run=1.
// A value is taken only if its field takes it (a listed model type; a whole number
// within the field's min, max and step); a link with any other value does not run.
function applyPresets() {
  const q = new URLSearchParams(location.search);
  let ok = true;
  for (const id of ['model-type', 'layers', 'interval', 'experts', 'hidden', 'tokens', 'limit']) {
    const v = q.get(id.replace('-', '_'));
    if (v === null) continue;
    if (presetFits($(id), v)) $(id).value = v;
    else ok = false;
  }
  if (q.has('runs')) {
    const r = q.get('runs').split(',');
    $('run-lazy').checked = r.includes('lazy');
    $('run-eager').checked = r.includes('eager');
    $('run-attn').checked = r.includes('attention-only');
  }
  if (q.has('census')) $('census').checked = q.get('census') !== '0';
  if (q.has('sbs')) $('side-by-side').checked = q.get('sbs') === '1';
  return ok && q.get('run') === '1';
}

function presetFits(el, v) {
  if (el.tagName === 'SELECT') return [...el.options].some((o) => o.value === v);
  if (!/^[0-9]+$/.test(v)) return false;
  const n = Number(v), min = Number(el.min || 0), step = Number(el.step || 1);
  return n >= min && (el.max === '' || n <= Number(el.max)) && (n - min) % step === 0;
}

for (const el of document.querySelectorAll('input, select, textarea')) el.addEventListener('input', predict);
$('clear-config').onclick = () => { $('config').value = ''; $('example').value = ''; predict(); };
$('run').onclick = run;
$('stop').onclick = stop;
const box = $('config');
box.addEventListener('dragover', (e) => { e.preventDefault(); box.classList.add('drop'); });
box.addEventListener('dragleave', () => box.classList.remove('drop'));
box.addEventListener('drop', (e) => {
  e.preventDefault();
  box.classList.remove('drop');
  const f = e.dataTransfer.files[0];
  if (f) f.text().then((t) => { box.value = t; predict(); });
});

// The example configs (cmd/decode's testdata), and ?config=NAME to preset one.
const examples = fetch('configs/index.json').then((r) => r.json()).then((names) => {
  for (const n of names) $('example').add(new Option(n, n));
}).catch(() => {});
function loadExample(name) {
  return fetch('configs/' + encodeURIComponent(name) + '.json').then((r) => {
    if (!r.ok) throw new Error(name + ': ' + r.status);
    return r.text();
  }).then((t) => { $('config').value = t; $('example').value = name; predict(); })
    .catch((e) => { $('predict-out').textContent = 'error: example config ' + e.message; });
}
$('example').addEventListener('change', () => {
  if ($('example').value) loadExample($('example').value);
  else { $('config').value = ''; predict(); }
});

const autorun = applyPresets();
const preset = new URLSearchParams(location.search).get('config');
if (preset) examples.then(() => loadExample(preset)); else predict();
if (autorun) {
  // Once the engine is up and a preset config is in.
  const start = setInterval(() => {
    if (window.ingotState.ready && (!preset || $('config').value)) { clearInterval(start); run(); }
  }, 50);
}
