// The engine's exported ABI and nothing else: numbers in, numbers out.
// Kernels live in their own files; the host (src/engine/) lays out the arena.
// Named, not `export *`: kernel files export helpers to each other, and those
// must not become part of the ABI.
export { reserve } from "./memory";
export { sha256_head32, sha256_hex, sha256_batch_hex, sha256_batch_hex_scalar, sha256_counter_texts, sha256_plain_quotes } from "./sha256";
export { scan_max_pairs, scan_text, scan_text_scalar, scan_utf16_offsets, scan_utf16_to_utf8, scan_dedup, scan_count_byte } from "./scan";
export { walk_json, walk_json_scalar, walk_gate } from "./walk";
export { lines_scan } from "./lines";
