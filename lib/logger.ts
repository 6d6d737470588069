/** Structured logging for the agent and proxy layers: nothing is printed unless a logger is injected. */

/** LogFields say what a log line is about; any other field may be added. */
export interface LogFields {
  /** The pod's UID. */
  pod?: string;
  /** The IP address the line is about. */
  ip?: string;
  /** The ipset set. */
  set?: string;
  /** The namespace, as a path. */
  netns?: string;
  /** The agent step (an AgentStep). */
  step?: string;
  [key: string]: unknown;
}

/**
 * Logger is what the agent and proxy layers log through (pino, winston and console fit). A logger given in options
 * may leave levels out: the missing ones drop their lines. A method that throws is not caught.
 */
export interface Logger {
  /** debug logs each step's detail. */
  debug(message: string, fields?: LogFields): void;
  /** info logs what changed on the node. */
  info(message: string, fields?: LogFields): void;
  /** warn logs what was refused or repaired (owner mismatches, drift). */
  warn(message: string, fields?: LogFields): void;
  /** error logs a failed step or a listener that threw. */
  error(message: string, fields?: LogFields): void;
}

const noop = (): void => undefined;

/** silentLogger drops everything (the default). */
export const silentLogger: Logger = { debug: noop, info: noop, warn: noop, error: noop };

/** toLogger fills the levels a partial logger leaves out. */
export function toLogger(partial: Partial<Logger> | undefined): Logger {
  if (!partial) return silentLogger;
  return {
    debug: partial.debug?.bind(partial) ?? noop,
    info: partial.info?.bind(partial) ?? noop,
    warn: partial.warn?.bind(partial) ?? noop,
    error: partial.error?.bind(partial) ?? noop,
  };
}
