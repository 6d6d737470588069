/**
 * Quoting as iptables-restore reads a rule line (xshared.c add_param_to_argv, 1.8.9): whitespace separates
 * arguments; a double quote opens or closes a quoted run in which a backslash takes the next character literally.
 * iptables-save writes arguments the same way, so one tokenizer reads both.
 */

/** MAX_ARG_BYTES is the longest argument iptables-restore accepts (its parameter buffer is 1024 bytes with the NUL). */
export const MAX_ARG_BYTES = 1023;

const NEEDS_QUOTES = /[\s"'\\]/;

/** quoteArg renders one argument so that tokenizeLine gives it back unchanged. */
export function quoteArg(arg: string): string {
  if (!NEEDS_QUOTES.test(arg)) return arg;
  return `"${arg.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

// Rendered frozen argument lists, by identity: a rule set's arguments and the learned canonical forms are frozen
// and reused apply after apply, so their text is made once.
const rendered = new WeakMap<readonly string[], string>();

/** renderArgs joins arguments into the tail of a rule line. */
export function renderArgs(args: readonly string[]): string {
  const known = rendered.get(args);
  if (known !== undefined) return known;
  const text = args.map(quoteArg).join(' ');
  if (Object.isFrozen(args)) rendered.set(args, text);
  return text;
}

/**
 * tokenizeLine splits a restore or save line into arguments. Throws on an unterminated quote, which iptables
 * reports as a parse error too.
 */
export function tokenizeLine(line: string): string[] {
  const out: string[] = [];
  let current = '';
  let started = false;
  let quoted = false;
  let escaped = false;
  for (const ch of line) {
    if (quoted) {
      if (escaped) {
        current += ch;
        escaped = false;
      } else if (ch === '\\') {
        escaped = true;
      } else if (ch === '"') {
        quoted = false;
      } else {
        current += ch;
      }
      continue;
    }
    if (ch === '"') {
      quoted = true;
      started = true;
    } else if (ch === ' ' || ch === '\t' || ch === '\n') {
      if (started && current.length > 0) out.push(current);
      current = '';
      started = false;
    } else {
      current += ch;
      started = true;
    }
  }
  if (quoted) throw new Error('unterminated quote');
  if (current.length > 0) out.push(current);
  return out;
}
