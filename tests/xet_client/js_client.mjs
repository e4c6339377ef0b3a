// @huggingface/hub (huggingface.js), the JavaScript client that uploads
// through Xet from Node, run by the tests as hub_client.py runs
// huggingface_hub: one process per call, the Hub from HF_ENDPOINT, the token
// from HF_TOKEN, the test CA from NODE_EXTRA_CA_CERTS. The package comes from
// XET_JS_MODULES (build-asan/xet-js/node_modules: ./dev test installs it
// from tests/xet_client/js/package-lock.json).
//
//   js_client.mjs create-repo REPO                  -> {"url"}
//   js_client.mjs upload-file REPO PATH_IN_REPO FILE  (uploadFile)
//   js_client.mjs upload-folder REPO FOLDER           (uploadFiles, its files)
//       -> {"commit"} (upload-file also "seconds", "t_start", "t_end")
//   js_client.mjs held-upload REPO FIRST REST...    one commit of all the
//       files whose second global-dedup query waits: prints "HALF" once the
//       first is answered, and sends the second after a line on stdin
//   js_client.mjs download REPO FILENAME DIR        (downloadFile)
//       -> {"path", "sha256", "size"}
//   js_client.mjs version                           -> {"hub": version}
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const modules = process.env.XET_JS_MODULES;
if (!modules) {
  throw new Error("XET_JS_MODULES (the node_modules with @huggingface/hub) is not set");
}
const require = createRequire(join(modules, "package.json"));
const hub = require("@huggingface/hub");
const credentials = { accessToken: process.env.HF_TOKEN, hubUrl: process.env.HF_ENDPOINT };

// A fetch whose second global-dedup query waits for a line on stdin: the
// client's own hook (every call takes `fetch`), so one upload is known to be
// under way while the test acts.
function heldFetch() {
  let queries = 0;
  let go = null;
  const released = new Promise((resolve) => {
    go = resolve;
  });
  createInterface({ input: process.stdin }).once("line", () => go());
  return async (url, init) => {
    if (!/\/chunks?\/[^/]+\/[0-9a-fA-F]{64}$/.test(new URL(String(url)).pathname)) {
      return fetch(url, init);
    }
    queries += 1;
    if (queries > 1) {
      await released;
      return fetch(url, init);
    }
    const answer = await fetch(url, init);
    process.stdout.write("HALF\n");
    return answer;
  };
}

async function main(argv) {
  const [verb, repo, ...rest] = argv;
  if (verb === "version") {
    return { hub: require("@huggingface/hub/package.json").version };
  }
  if (verb === "create-repo") {
    try {
      const out = await hub.createRepo({ repo, private: true, ...credentials });
      return { url: out.repoUrl };
    } catch (e) {
      if (e.statusCode === 409) {
        return { url: `${credentials.hubUrl}/${repo}` };
      }
      throw e;
    }
  }
  if (verb === "upload-file") {
    const [pathInRepo, file] = rest;
    const tStart = Date.now() / 1000;
    const t0 = performance.now();
    const content = pathToFileURL(file);
    const out = await hub.uploadFile({ repo, file: { path: pathInRepo, content }, ...credentials });
    return {
      commit: out.commit.oid,
      seconds: (performance.now() - t0) / 1000,
      t_start: tStart,
      t_end: Date.now() / 1000,
    };
  }
  if (verb === "upload-folder") {
    const [folder] = rest;
    const files = readdirSync(folder)
      .sort()
      .map((name) => ({ path: name, content: pathToFileURL(join(folder, name)) }));
    const out = await hub.uploadFiles({ repo, files, ...credentials });
    return { commit: out.commit.oid };
  }
  if (verb === "held-upload") {
    const files = rest.map((p) => ({ path: basename(p), content: pathToFileURL(p) }));
    const out = await hub.uploadFiles({ repo, files, ...credentials, fetch: heldFetch() });
    process.stdin.destroy();
    return { commit: out.commit.oid, files: rest.map((p) => ({ path: p, size: readFileSync(p).length })) };
  }
  if (verb === "download") {
    const [filename, dir] = rest;
    const blob = await hub.downloadFile({ repo, path: filename, ...credentials });
    if (!blob) {
      throw new Error(`${filename}: not in ${repo}`);
    }
    const data = Buffer.from(await blob.arrayBuffer());
    mkdirSync(dir, { recursive: true });
    const path = join(dir, filename);
    writeFileSync(path, data);
    return { path, sha256: createHash("sha256").update(data).digest("hex"), size: data.length };
  }
  throw new Error(`unknown verb ${verb}`);
}

main(process.argv.slice(2)).then(
  (out) => process.stdout.write(JSON.stringify(out)),
  (e) => {
    process.stderr.write(`${e.stack ?? e}\n`);
    process.exit(1);
  },
);
