// Reads the fenced code blocks of a Markdown file the way a reader sees them: a ```ts or ```js block is code to run
// (```ts root: it needs root and namespaces), and each `// → text` comment in it is a line that code prints, in order,
// shown next to the call that prints it.

/** One runnable block of the README. */
export interface ReadmeBlock {
  /** The heading the block sits under, with its ordinal there ("ipset (`Ipset`) #1"), for test names. */
  readonly name: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly lang: 'ts' | 'js';
  /** Marked `root`: runs in a throwaway namespace, as root only. */
  readonly root: boolean;
  readonly code: string;
  /** What it prints (stdout), line by line: the text of its `// → ` comments. */
  readonly prints: readonly string[];
}

interface Fence {
  line: number;
  lang: string;
  flags: string[];
  body: string;
}

/** Languages a fence may name; anything else is a mistake the test reports instead of skipping silently. */
const KNOWN = new Set(['ts', 'js', 'sh']);

/** fences splits Markdown into its fenced blocks (``` fences only; they do not nest). */
function fences(markdown: string): Fence[] {
  const lines = markdown.split('\n');
  const out: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i]!);
    if (i >= lines.length) throw new Error(`README line ${start + 1}: code fence never closed`);
    out.push({ line: start + 1, lang: open[1]!, flags: open[2]!.trim().split(/\s+/).filter(Boolean), body: body.join('\n') });
  }
  return out;
}

/** readmeBlocks returns the runnable blocks of markdown; throws on a fence of an unknown language or flag. */
export function readmeBlocks(markdown: string): ReadmeBlock[] {
  const lines = markdown.split('\n');
  const all = fences(markdown);
  const blocks: ReadmeBlock[] = [];
  const perHeading = new Map<string, number>();
  for (const f of all) {
    if (!KNOWN.has(f.lang)) throw new Error(`README line ${f.line}: fence language '${f.lang}' is not one of ${[...KNOWN].join(', ')}`);
    if (f.lang !== 'ts' && f.lang !== 'js') continue;
    const unknown = f.flags.filter((flag) => flag !== 'root');
    if (unknown.length > 0) throw new Error(`README line ${f.line}: unknown block flag '${unknown[0]}'`);
    const heading = lines.slice(0, f.line - 1).reverse().find((l) => /^#{1,6} /.test(l))?.replace(/^#+\s*/, '') ?? 'top';
    const n = (perHeading.get(heading) ?? 0) + 1;
    perHeading.set(heading, n);
    const prints = f.body.split('\n').flatMap((l) => {
      const shown = /\/\/ → (.*)$/.exec(l);
      return shown ? [shown[1]!] : [];
    });
    blocks.push({ name: `${heading} #${n}`, line: f.line, lang: f.lang, root: f.flags.includes('root'), code: f.body, prints });
  }
  return blocks;
}
