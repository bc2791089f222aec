/**
 * A deterministic corpus of realistic tool outputs for the benchmarks: shell
 * sessions full of paths (listings, find, tracebacks, pip and wget logs),
 * markdown web pages with links, images and code, and JSON search results with
 * URLs. Mostly ASCII with the occasional accented word, CJK or emoji, as
 * fetched pages are. Same options, same documents.
 */

export type CorpusKind = "shell" | "markdown" | "json";

export interface CorpusDoc {
  kind: CorpusKind;
  text: string;
}

export interface CorpusOptions {
  /** Total size in UTF-16 units (≈ UTF-8 bytes; the text is mostly ASCII). Default 32 MiB. */
  chars?: number;
  /** PRNG seed. Default 1. */
  seed?: number;
  /** Size range of one document, in UTF-16 units. Default [1_000, 48_000]. */
  docChars?: readonly [number, number];
}

/** mulberry32: small, fast, seeded, and the same on every platform (the corpus, and tests' random cases). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  "the of and to in is for that with on as are by this from be or at an was which it can data model results " +
  "analysis table figure report summary value error file output input quarterly revenue growth market customer " +
  "users request response server client network latency memory cache version release update install package " +
  "function method class module test build deploy config option default parameter returns example see also " +
  "population climate energy study paper authors dataset sample mean median variance regression training loss"
).split(" ");
const RARE_WORDS = ["café", "naïve", "résumé", "Zürich", "São Paulo", "straße", "—", "données", "東京", "数据", "“quoted”", "🙂", "…"];
const DIRS = ["outputs", "uploads", "runs", "reports", "charts", "data", "exports", "notebooks"];
const NAMES = ["report", "summary", "plot", "fig", "results", "sales_q3", "model-v2", "table", "notes", "forecast", "cleaned"];
const FILE_EXTS = ["csv", "png", "json", "txt", "md", "xlsx", "pdf", "log", "py", "parquet", "html", "jpg", "ipynb"];
const HOSTS = ["example.com", "docs.python.org", "en.wikipedia.org", "github.com", "cdn.example.org", "arxiv.org", "www.nature.com", "data.gov", "news.ycombinator.com", "static.example.net"];
const URL_EXTS = ["html", "pdf", "png", "jpg", "csv", "json", "md", "htm", "php", "aspx", "svg", "zip", "txt", "xlsx", "docx", "gif"];

class Writer {
  readonly rnd: () => number;
  constructor(seed: number) {
    this.rnd = prng(seed);
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.rnd() * (hi - lo + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.rnd() * items.length)];
  }
  chance(p: number): boolean {
    return this.rnd() < p;
  }
  word(): string {
    return this.chance(0.01) ? this.pick(RARE_WORDS) : this.pick(WORDS);
  }
  words(lo: number, hi: number): string {
    const n = this.int(lo, hi);
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(this.word());
    return out.join(" ");
  }
  sentence(): string {
    const s = this.words(6, 22);
    return s[0].toUpperCase() + s.slice(1) + this.pick([".", ".", ".", "?", "!", ":"]);
  }
  fileName(): string {
    return `${this.pick(NAMES)}_${this.int(1, 999)}.${this.pick(FILE_EXTS)}`;
  }
  sandboxPath(): string {
    const sub = this.chance(0.4) ? `run-${this.int(1, 60)}/` : "";
    return `/mnt/user-data/${this.pick(DIRS)}/${sub}${this.fileName()}`;
  }
  systemPath(): string {
    return this.pick([
      `/usr/lib/python3.11/site-packages/${this.pick(["pandas", "numpy", "matplotlib", "requests"])}/${this.pick(["core", "io", "util"])}/${this.pick(WORDS)}.py`,
      `/home/user/project/src/${this.pick(WORDS)}.ts`,
      `/tmp/tmp${this.int(100000, 999999).toString(36)}/${this.fileName()}`,
      `/etc/${this.pick(["hosts", "passwd", "nginx/nginx.conf"])}`,
    ]);
  }
  url(): string {
    const segs: string[] = [];
    for (let i = this.int(0, 4); i > 0; i--) segs.push(this.chance(0.2) ? String(this.int(2010, 2025)) : this.pick(WORDS));
    let path = segs.join("/");
    const r = this.rnd();
    if (r < 0.55) path += `${path ? "/" : ""}${this.pick(WORDS)}-${this.int(1, 99)}.${this.pick(URL_EXTS)}`;
    else if (r < 0.8) path += `${path ? "/" : ""}${this.pick(WORDS)}_${this.pick(WORDS)}`;
    let url = `${this.chance(0.9) ? "https" : "http"}://${this.pick(HOSTS)}/${path}`;
    if (this.chance(0.15)) url += `?${this.pick(["id", "q", "page", "download"])}=${this.int(1, 9999)}`;
    if (this.chance(0.08)) url += `#${this.pick(WORDS)}`;
    return url;
  }
}

/** Lines of one document and their running size (newlines included). */
class Lines {
  readonly lines: string[] = [];
  chars = 0;
  readonly push = (line: string) => {
    this.lines.push(line);
    this.chars += line.length + 1;
  };
  text(): string {
    return this.lines.join("\n");
  }
}

function shellDoc(w: Writer, target: number): string {
  const doc = new Lines();
  const push = doc.push;
  while (doc.chars < target) {
    switch (w.int(0, 6)) {
      case 0: {
        const dir = `/mnt/user-data/${w.pick(DIRS)}`;
        push(`$ ls -la ${dir}`);
        push(`total ${w.int(8, 4000)}`);
        for (let i = w.int(3, 30); i > 0; i--) {
          push(`-rw-r--r-- 1 user user ${String(w.int(100, 9_999_999)).padStart(8)} Mar ${String(w.int(1, 28)).padStart(2)} ${w.int(10, 23)}:${String(w.int(0, 59)).padStart(2, "0")} ${w.fileName()}`);
        }
        break;
      }
      case 1:
        push(`$ find /mnt/user-data -name '*.${w.pick(FILE_EXTS)}'`);
        for (let i = w.int(2, 25); i > 0; i--) push(w.chance(0.8) ? w.sandboxPath() : w.systemPath());
        break;
      case 2: {
        const p = w.sandboxPath();
        push("Traceback (most recent call last):");
        for (let i = w.int(1, 5); i > 0; i--) {
          push(`  File "${w.systemPath()}", line ${w.int(1, 3000)}, in ${w.pick(WORDS)}`);
          push(`    ${w.pick(["df", "result", "x", "data"])} = ${w.pick(["pd.read_csv", "open", "json.load", "np.load"])}('${p}')`);
        }
        push(`FileNotFoundError: [Errno 2] No such file or directory: '${p}'`);
        break;
      }
      case 3:
        push(`$ python ${w.pick(["analyze", "plot", "clean", "export"])}.py`);
        for (let i = w.int(1, 8); i > 0; i--) {
          push(w.chance(0.5) ? `Saved ${w.pick(WORDS)} to ${w.sandboxPath()}.` : `Processed ${w.int(1, 100000)} rows (${w.int(1, 99)}.${w.int(0, 9)}s)`);
        }
        break;
      case 4: {
        const pkg = w.pick(["pandas", "numpy", "requests", "matplotlib", "openpyxl"]);
        push(`$ pip install ${pkg}`);
        push(`Collecting ${pkg}==${w.int(1, 3)}.${w.int(0, 30)}.${w.int(0, 9)}`);
        push(`  Downloading https://files.pythonhosted.org/packages/${w.int(10, 99).toString(16)}/${w.int(10, 99).toString(16)}/${pkg}-${w.int(1, 3)}.${w.int(0, 30)}-cp311-cp311-manylinux_2_17_x86_64.whl (${w.int(1, 40)}.${w.int(0, 9)} MB)`);
        push(`     ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ ${w.int(1, 40)}.0/${w.int(1, 40)}.0 MB ${w.int(1, 90)}.${w.int(0, 9)} MB/s eta 0:00:00`);
        push(`Successfully installed ${pkg}`);
        break;
      }
      case 5: {
        const url = w.url();
        push(`$ wget ${url}`);
        push(`--2024-03-${w.int(10, 28)} ${w.int(10, 23)}:${w.int(10, 59)}:${w.int(10, 59)}--  ${url}`);
        push(`Resolving ${w.pick(HOSTS)}... ${w.int(1, 254)}.${w.int(0, 254)}.${w.int(0, 254)}.${w.int(1, 254)}`);
        push(`HTTP request sent, awaiting response... 200 OK`);
        push(`Saving to: ‘${w.fileName()}’`);
        break;
      }
      default:
        push(`$ ${w.pick(["make", "npm run build", "cargo build"])}`);
        for (let i = w.int(2, 15); i > 0; i--) {
          push(`${w.pick(["gcc -O2 -c", "tsc -p", "rustc --edition 2021"])} src/${w.pick(WORDS)}.${w.pick(["c", "ts", "rs"])} -o build/${w.pick(WORDS)}.o`);
        }
    }
  }
  return doc.text();
}

function markdownDoc(w: Writer, target: number): string {
  const doc = new Lines();
  const push = doc.push;
  for (const line of [`# ${w.sentence()}`, "", `Source: ${w.url()}`, ""]) push(line);
  while (doc.chars < target) {
    switch (w.int(0, 5)) {
      case 0:
        push(`## ${w.words(2, 6)}`);
        break;
      case 1: {
        const parts: string[] = [];
        for (let i = w.int(2, 7); i > 0; i--) {
          const s = w.sentence();
          const r = w.rnd();
          if (r < 0.25) parts.push(`${s} See [${w.words(1, 4)}](${w.url()}).`);
          else if (r < 0.32) parts.push(`${s} (${w.url()})`);
          else if (r < 0.38) parts.push(`${s} Run \`${w.pick(["pip install", "curl -O", "wget"])} ${w.url()}\` first.`);
          else parts.push(s);
        }
        push(parts.join(" "));
        break;
      }
      case 2:
        push(`![${w.words(1, 5)}](${w.url()} "${w.words(1, 4)}")`);
        break;
      case 3:
        for (let i = w.int(2, 8); i > 0; i--) push(`- ${w.words(2, 10)}${w.chance(0.4) ? ` — <${w.url()}>` : ""}`);
        break;
      case 4:
        push("| name | value | link |");
        push("|---|---|---|");
        for (let i = w.int(2, 10); i > 0; i--) push(`| ${w.word()} | ${w.int(0, 99999)} | [${w.word()}](${w.url()}) |`);
        break;
      default:
        push("```python");
        push(`import pandas as pd`);
        push(`df = pd.read_csv("${w.url()}")`);
        push(`df.to_csv("${w.sandboxPath()}")`);
        push("```");
    }
    push("");
  }
  for (let i = 1; i <= w.int(1, 8); i++) push(`[${i}]: ${w.url()}`);
  return doc.text();
}

function jsonDoc(w: Writer, target: number): string {
  const results: unknown[] = [];
  let n = 0;
  while (n < target) {
    const r = {
      title: w.sentence(),
      url: w.url(),
      snippet: `${w.sentence()} ${w.sentence()}`,
      thumbnail: w.chance(0.4) ? `https://${w.pick(HOSTS)}/thumbs/${w.int(1000, 99999)}.jpg` : null,
      favicon: `https://${w.pick(HOSTS)}/favicon.ico`,
      published: `20${w.int(10, 25)}-0${w.int(1, 9)}-1${w.int(0, 9)}`,
      score: Math.round(w.rnd() * 1000) / 1000,
    };
    results.push(r);
    n += 200 + r.title.length + r.url.length + r.snippet.length;
  }
  const body = { query: w.words(2, 6), results };
  return w.chance(0.5) ? JSON.stringify(body, null, 2) : JSON.stringify(body);
}

/** The corpus: documents of the three kinds, in a seeded order, totalling about `chars`. */
export function generateCorpus(options: CorpusOptions = {}): CorpusDoc[] {
  const { chars = 32 * 1024 * 1024, seed = 1, docChars = [1_000, 48_000] } = options;
  const w = new Writer(seed);
  const docs: CorpusDoc[] = [];
  let total = 0;
  while (total < chars) {
    const target = Math.min(w.int(docChars[0], docChars[1]), Math.max(1, chars - total));
    const kind = w.pick<CorpusKind>(["shell", "markdown", "json"]);
    const text = kind === "shell" ? shellDoc(w, target) : kind === "markdown" ? markdownDoc(w, target) : jsonDoc(w, target);
    docs.push({ kind, text });
    total += text.length;
  }
  return docs;
}
