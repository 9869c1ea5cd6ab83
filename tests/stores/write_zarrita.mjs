// Writes tests/stores/zarrita/defaults.zarr with zarrita.js (npm `zarrita`, run with node):
//   cd "$(mktemp -d)" && npm install zarrita@0.7.5 && \
//     NODE_PATH="$PWD/node_modules" node --experimental-default-type=module \
//     /path/to/tests/stores/write_zarrita.mjs /path/to/tests/stores/zarrita
// (or copy this file next to node_modules and run it with node there).
// Arrays created the way zarrita's README shows: "plain" with no codecs at all (zarrita then
// writes "codecs": [] and "fill_value": null), "lz4" and "zlib" with the bare numcodecs names
// zarrita registers (zarrita 0.7.5 cannot write sharded arrays). values.json beside the store holds what
// was written: every array is int32 (or float32), values i * 7 - 40 (as float32: i / 4).
import * as fs from "node:fs";
import * as path from "node:path";
import * as zarr from "zarrita";
import FileSystemStore from "@zarrita/storage/fs";

// zarrita's own "zlib" codec only decodes: encode with numcodecs.js's Zlib (the library zarrita
// registers for "lz4" and used for "zlib" before), under the same bare name
zarr.registry.set("zlib", () => import("numcodecs/zlib").then((m) => m.default));

const out = path.resolve(process.argv[2] ?? ".");
const where = path.join(out, "defaults.zarr");
fs.rmSync(where, { recursive: true, force: true });
const store = new FileSystemStore(where);
const root = await zarr.create(zarr.root(store), { attributes: { writer: "zarrita.js" } });

const shape = [6, 10];
const bytes = { name: "bytes", configuration: { endian: "little" } };
const arrays = {
  plain: { dtype: "int32", chunkShape: [4, 4] },
  lz4: { dtype: "int32", chunkShape: [4, 4], codecs: [bytes, { name: "lz4", configuration: { acceleration: 1 } }] },
  zlib: { dtype: "float32", chunkShape: [4, 4], codecs: [bytes, { name: "zlib", configuration: { level: 5 } }] },
};
const values = {};
for (const [name, options] of Object.entries(arrays)) {
  const arr = await zarr.create(root.resolve(name), { shape, ...options });
  const n = shape[0] * shape[1];
  const data = options.dtype === "float32" ? new Float32Array(n) : new Int32Array(n);
  for (let i = 0; i < n; i++) data[i] = options.dtype === "float32" ? i / 4 : i * 7 - 40;
  await zarr.set(arr, null, { data, shape, stride: [shape[1], 1] });
  values[name] = { dtype: options.dtype, shape, data: Array.from(data) };
}
fs.writeFileSync(path.join(out, "values.json"), JSON.stringify(values));
const version = JSON.parse(fs.readFileSync(new URL(import.meta.resolve("zarrita/package.json")))).version;
console.log(`zarrita ${version}, node ${process.version}: wrote ${where}`);
