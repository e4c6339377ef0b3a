// Makes vectors.json: chunk boundaries, chunk hashes and file hashes cut by
// xet-core's own chunker, for inputs from seeded generators that
// chunk_vectors_test.cpp regenerates byte for byte. Needs Node >= 20 and npm;
// the tests read only the committed vectors.json.
//
// The oracle is the Wasm build of xet-core (hf_xet_thin_wasm, xet-core commit
// 861056a) that @huggingface/hub 2.17.5 vendors as a test oracle. Do not use
// @huggingface/xetchunk-wasm 0.2.0: it cuts chunks below the 8 KiB minimum
// (huggingface.js issue #2421).
//
//   mkdir /tmp/oracle && cd /tmp/oracle && npm install @huggingface/hub@2.17.5
//   node tests/unit/chunk/make_vectors.mjs \
//     /tmp/oracle/node_modules/@huggingface/hub/src/vendor/xet-chunk > tests/unit/chunk/vectors.json
import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node make_vectors.mjs <@huggingface/hub 2.17.5>/src/vendor/xet-chunk");
  process.exit(64);
}

// The glue is an ES module in a package without "type": "module"; load its
// text as one. The Wasm binary is base64 inside a TypeScript module.
const glue = await import(
  "data:text/javascript;base64," + Buffer.from(readFileSync(`${dir}/chunker_wasm_bg.js`, "utf8")).toString("base64")
);
const ts = readFileSync(`${dir}/chunker_wasm_bg.wasm.base64.ts`, "utf8");
const wasm = Buffer.from(ts.match(/const wasmBase64 = `([^`]*)`/)[1].replace(/\s+/g, ""), "base64");
const commit = ts.match(/XET_CORE_COMMIT = "([0-9a-f]+)"/)[1];
const wantSha = ts.match(/XET_CORE_WASM_SHA256 = "([0-9a-f]+)"/)[1];
const gotSha = createHash("sha256").update(wasm).digest("hex");
if (gotSha !== wantSha) throw new Error(`Wasm sha256 ${gotSha}, the module says ${wantSha}`);
glue.initSync({ module: wasm });

// ---- generators (chunk_vectors_test.cpp has the same) ----------------------
// xorshift32 (shifts 13, 17, 5): each byte is the low 8 bits of the state
// after one step. "pattern" repeats the first `period` bytes of that stream;
// "mixed" takes the stream's byte in even runs of `run` bytes and 0 in odd
// ones (the stream advances on every byte); "zeros" is all 0.
function generate(gen, offset, length) {
  const out = new Uint8Array(length);
  if (gen.kind === "zeros") return out;
  let s = gen.seed >>> 0;
  const step = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s & 0xff;
  };
  if (gen.kind === "pattern") {
    const period = new Uint8Array(gen.period);
    for (let i = 0; i < gen.period; i++) period[i] = step();
    for (let i = 0; i < length; i++) out[i] = period[(offset + i) % gen.period];
    return out;
  }
  for (let i = 0; i < offset; i++) step();
  for (let i = 0; i < length; i++) {
    const b = step();
    out[i] = gen.kind === "mixed" && Math.floor((offset + i) / gen.run) % 2 === 1 ? 0 : b;
  }
  return out;
}

// Feeds the input to the oracle in pieces (`feeds` sizes, then the rest in
// pieces of `rest_piece` bytes), returns its chunks.
function oracle(gen, size, feeds, restPiece) {
  const chunker = new glue.Chunker(64 * 1024);
  const chunks = [];
  const sizes = [...feeds];
  let fed = sizes.reduce((a, b) => a + b, 0);
  if (fed > size) throw new Error("feeds longer than the input");
  while (fed < size) {
    const n = Math.min(restPiece, size - fed);
    sizes.push(n);
    fed += n;
  }
  let offset = 0;
  const sha = createHash("sha256");
  // The generator restarts per piece: fine for the small inputs, and the
  // large one is fed whole-stream below.
  for (const n of sizes) {
    const piece = generate(gen, offset, n);
    sha.update(piece);
    chunks.push(...chunker.add_data(piece));
    offset += n;
  }
  chunks.push(...chunker.finish());
  chunker.free();
  return { chunks, sha256: sha.digest("hex") };
}

// A stream generator for the large input, so it is not regenerated from 0
// for every piece.
function oracleStream(gen, size, piece) {
  const chunker = new glue.Chunker(64 * 1024);
  const chunks = [];
  const sha = createHash("sha256");
  let s = gen.seed >>> 0;
  for (let offset = 0; offset < size; offset += piece) {
    const n = Math.min(piece, size - offset);
    const buf = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      s ^= s << 13;
      s >>>= 0;
      s ^= s >>> 17;
      s ^= s << 5;
      s >>>= 0;
      buf[i] = s & 0xff;
    }
    sha.update(buf);
    chunks.push(...chunker.add_data(buf));
  }
  chunks.push(...chunker.finish());
  chunker.free();
  return { chunks, sha256: sha.digest("hex") };
}

const MiB = 1024 * 1024;
const REGRESSION = { kind: "xorshift32", seed: 0x9e3779b9 };
const cases = [];
function add(name, gen, size, feeds = [], restPiece = 1 << 30) {
  const { chunks, sha256 } = oracle(gen, size, feeds, restPiece);
  // The same input in one piece must cut the same way.
  const whole = oracle(gen, size, [], 1 << 30);
  if (JSON.stringify(whole.chunks) !== JSON.stringify(chunks) || whole.sha256 !== sha256)
    throw new Error(`${name}: the oracle depends on the split`);
  cases.push({ name, gen, size, feeds, rest_piece: restPiece, chunks, sha256 });
  return chunks;
}

add("empty", REGRESSION, 0);
for (const n of [1, 100, 8127, 8128, 8191]) add(`under the minimum: ${n} bytes`, REGRESSION, n);
for (const n of [8192, 8193, 65535, 65536, 65537, 131071, 131072, 131073, 262144])
  add(`${n} bytes`, REGRESSION, n);
for (const n of [1000, 131072, 3 * 131072 - 1, 3 * 131072, 3 * 131072 + 1])
  add(`zeros: ${n} bytes`, { kind: "zeros" }, n);

const regression = add("huggingface.js #2421 regression, 3 MiB", REGRESSION, 3 * MiB);
if (regression.length !== 52 || regression[44].length !== 131072 ||
    regression[44].hash !== "8ee1833ff616a01e187888865c8e22f403c860b7a6c347ba28c4511995875086")
  throw new Error("the oracle does not reproduce huggingface.js #2421's xet-core result");
// Splits at awkward offsets: single bytes, around the minimum and the hash
// start (8127), across a boundary, a prime-sized stream.
add("3 MiB fed at awkward offsets", REGRESSION, 3 * MiB,
    [1, 63, 64, 7999, 1, 1, 8126, 2, 65536, 131071, 3, 131072, 131073]);
add("3 MiB fed in 7919-byte pieces", REGRESSION, 3 * MiB, [], 7919);
add("3 MiB fed in 1-byte pieces for 20000 bytes", REGRESSION, 3 * MiB, new Array(20000).fill(1), 1 << 30);

// Inputs that end exactly at, just before and just after xet-core's
// boundaries of the longer stream.
let at = 0;
for (const [i, c] of regression.slice(0, 3).entries()) {
  at += c.length;
  for (const d of [-1, 0, 1]) add(`prefix ending ${d} from boundary ${i + 1}`, REGRESSION, at + d);
}

add("pattern, period 4096, 1 MiB", { kind: "pattern", seed: 7, period: 4096 }, MiB);
add("pattern, period 100000, 2 MiB", { kind: "pattern", seed: 11, period: 100000 }, 2 * MiB);
add("mixed, runs of 20000, 2 MiB", { kind: "mixed", seed: 13, run: 20000 }, 2 * MiB);
add("mixed, runs of 5000, 1 MiB", { kind: "mixed", seed: 17, run: 5000 }, MiB);
add("mixed, runs of 140000, 1 MiB", { kind: "mixed", seed: 19, run: 140000 }, MiB);

// Larger than the maximum chunk many times over (and than 128 MiB): bytes are
// made in the test from the seed, only the chunks are committed.
const LARGE = { kind: "xorshift32", seed: 0x2545f491 };
const largeSize = 136 * MiB + 12345;
cases.push({ name: "136 MiB", gen: LARGE, size: largeSize, feeds: [], rest_piece: MiB,
             ...oracleStream(LARGE, largeSize, MiB) });

// ---- output: one chunk a line, sizes and hashes only ------------------------
const lines = [];
lines.push("{");
lines.push(`  "oracle": "xet-core ${commit} (hf_xet_thin_wasm) as vendored by @huggingface/hub 2.17.5, Wasm sha256 ${gotSha}",`);
lines.push(`  "made_by": "tests/unit/chunk/make_vectors.mjs",`);
lines.push(`  "cases": [`);
cases.forEach((c, ci) => {
  const fileHash = glue.compute_file_hash(c.chunks.map((x) => ({ hash: x.hash, length: x.length })));
  lines.push("    {");
  lines.push(`      "name": ${JSON.stringify(c.name)},`);
  lines.push(`      "gen": ${JSON.stringify(c.gen)},`);
  lines.push(`      "size": ${c.size},`);
  lines.push(`      "feeds": ${JSON.stringify(c.feeds.length > 64 ? { repeat: c.feeds[0], times: c.feeds.length } : c.feeds)},`);
  lines.push(`      "rest_piece": ${c.rest_piece},`);
  lines.push(`      "file_hash": "${fileHash}",`);
  lines.push(`      "sha256": "${c.sha256}",`);
  lines.push(`      "chunks": [`);
  c.chunks.forEach((x, i) => lines.push(`        [${x.length}, "${x.hash}"]${i + 1 < c.chunks.length ? "," : ""}`));
  lines.push("      ]");
  lines.push(`    }${ci + 1 < cases.length ? "," : ""}`);
});
lines.push("  ]");
lines.push("}");
process.stdout.write(lines.join("\n") + "\n");
