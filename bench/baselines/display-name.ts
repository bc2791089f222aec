/**
 * The display-name rule of DESIGN §4 written the obvious way, with RegExp and
 * split, independently of `src/types.ts`'s char-code loops: so the baselines
 * that serve as oracles also check the library's display names.
 */
const SCHEME_URL = /^[a-z][a-z0-9+.-]*:\/\//i;
const DRIVE_PATH = /^[a-z]:[\\/]/i;
const SCHEME_ONLY = /^[a-z][a-z0-9+.-]*:$/i;

/** The last path segment, without query or fragment in a URL; the whole reference when that is empty or a bare scheme. */
export function regexpDisplayName(ref: string): string {
  const drive = DRIVE_PATH.test(ref);
  // `?` and `#` end a URL's path; in a file path they are part of the name.
  const path = SCHEME_URL.test(ref) ? ref.replace(/[?#][\s\S]*$/, "") : ref;
  // `\` separates only in a drive path.
  const separators = drive ? /[\\/]/ : /\//;
  const segment = path.replace(drive ? /[\\/]+$/ : /\/+$/, "").split(separators).pop()!;
  return segment === "" || SCHEME_ONLY.test(segment) ? ref : segment;
}
