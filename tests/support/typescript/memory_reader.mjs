// The TypeScript extension's reader of a memory file, copied verbatim (apart from being lifted
// out of the class) from chandra447/pi-hermes-memory, src/store/memory-store.ts at 71beae8:
// `readFileState` (the split) and `decodeEntry` (the metadata regex). MIT License,
// Copyright (c) 2025 Chandra Teja. Used by tests/integration/test_typescript_reader.py to
// check that every file this library writes reads back entry for entry in the original.
//
// Usage: node memory_reader.mjs FILE...  ->  JSON {FILE: [{text, created, lastReferenced,
// project}, ...]} on stdout.
import { readFileSync } from "node:fs";

const ENTRY_DELIMITER = "\n§\n"; // src/constants.ts

function readEntries(filePath) {
  const raw = readFileSync(filePath);
  const content = raw.toString("utf-8");
  const entries = content.trim()
    ? content.split(ENTRY_DELIMITER).map((entry) => entry.trim()).filter(Boolean)
    : [];
  return entries;
}

function decodeEntry(raw) {
  const match = raw.match(/^(.*?)\s*<!--\s*created=([^,]+),\s*last=([^,>]+)(?:,\s*project64=([A-Za-z0-9_-]+))?\s*-->\s*$/s);
  if (match) {
    let project = null;
    if (match[4]) {
      try { project = Buffer.from(match[4], "base64url").toString("utf-8").trim() || null; } catch {}
    }
    return { text: match[1].trim(), created: match[2].trim(), lastReferenced: match[3].trim(), project };
  }
  // Legacy entry without metadata — use today as default
  const today = new Date().toISOString().split("T")[0];
  return { text: raw.trim(), created: today, lastReferenced: today, project: null };
}

// decodeEntry's regex, repeated only to report whether it matched
const METADATA = /^(.*?)\s*<!--\s*created=([^,]+),\s*last=([^,>]+)(?:,\s*project64=([A-Za-z0-9_-]+))?\s*-->\s*$/s;

const out = {};
for (const file of process.argv.slice(2)) {
  // `metadata`: whether decodeEntry's regex matched (else it fell back to a legacy entry)
  out[file] = readEntries(file).map((raw) => ({ ...decodeEntry(raw), metadata: METADATA.test(raw) }));
}
process.stdout.write(JSON.stringify(out));
