/** Structured logging for the agent and proxy layers: nothing is printed unless a logger is injected. */

/** Fields that say what a log line is about. */
export interface LogFields {
  pod?: string;
  ip?: string;
  set?: string;
  netns?: string;
  step?: string;
  [key: string]: unknown;
}

/** Logger is what the agent layer logs through; every method is optional to implement via {@link toLogger}. */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
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
