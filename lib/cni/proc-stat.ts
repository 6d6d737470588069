/**
 * The start time of a process from its /proc/PID/stat text: field 22, in clock ticks since boot. The second field is
 * the command name in parentheses, and a name may hold spaces and parentheses itself (`(a) b (c)`), so the fields are
 * counted after the last ')' only.
 */

// After the last ')' come field 3 (state) onwards: starttime, field 22, is the 20th of them.
const STARTTIME_AFTER_COMM = 22 - 3;

/**
 * startTimeFromStat returns the starttime field of a /proc/PID/stat text (clock ticks after boot), or undefined when
 * the text is not one (no ')', too few fields, a starttime that is not a decimal integer). Never throws.
 */
export function startTimeFromStat(text: string): bigint | undefined {
  if (typeof text !== 'string') return undefined;
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = text.slice(close + 1).trim().split(/\s+/);
  const field = fields[STARTTIME_AFTER_COMM];
  if (field === undefined || !/^\d{1,20}$/.test(field)) return undefined;
  const value = BigInt(field);
  // starttime is an unsigned long long: anything wider is not a stat line.
  return value > 0xffffffffffffffffn ? undefined : value;
}
