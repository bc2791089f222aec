/** Shapes shared by the engine facade, extraction, the registry and the middleware. */

export type ArtifactType = "file" | "image" | "task" | "data";

/** One registry entry (DESIGN §1). snake_case: persisted, read by the Python twin. */
export interface ArtifactEntry {
  handle: string;
  tool_name: string;
  tool_call_id: string;
  call_index: number;
  artifact_type: ArtifactType;
  display_name: string;
  real_ref: string;
  mime_type?: string;
  created_at: string;
  consumed_by?: string[];
}

/** Registry directive: keep only the N most recent entries (first-seen order). */
export interface TrimDirective {
  op: "trim_to";
  keep: number;
}

export type ArtifactUpdate = ArtifactEntry | TrimDirective;

/** A reference found in free text. */
export interface ScanRef {
  type: "file";
  ref: string;
  display: string;
}

/** Label a reference for people and models: its last path segment, without
 * query or fragment; the whole reference when that segment is empty. */
export function displayName(ref: string): string {
  const cut = ref.search(/[?#]/);
  const path = cut === -1 ? ref : ref.slice(0, cut);
  const trimmed = path.replace(/[\\/]+$/, "");
  const seg = trimmed.slice(Math.max(trimmed.lastIndexOf("/"), trimmed.lastIndexOf("\\")) + 1);
  return seg === "" || /^[a-z][a-z0-9+.-]*:$/i.test(seg) ? ref : seg;
}
