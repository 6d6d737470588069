/**
 * What the server answers: a success (ADD's result, or nothing), a CNI error (`{cniVersion, code, msg, details}` on
 * stdout, exit status 1), and the mapping of a handler's thrown error to a CNI error code.
 */
import { AgentError } from '../agent/errors.js';
import { InvalidArgumentError } from '../errors.js';
import { CNI_ERROR_CODES, CniError } from './errors.js';
import type { CniCommand } from './request.js';
import type { WireAnswer } from './wire.js';

const encoder = new TextEncoder();
const EMPTY = new Uint8Array(0);
const MAX_STDERR_LINE = 4096;

/** successAnswer is exit status 0 with json (when given) on stdout. */
export function successAnswer(json?: unknown): WireAnswer {
  return { exitStatus: 0, stdout: json === undefined ? EMPTY : encoder.encode(JSON.stringify(json)), stderr: EMPTY };
}

/** errorAnswer is exit status 1 with the CNI error JSON on stdout and one line saying it on stderr (for the logs). */
export function errorAnswer(error: CniError, cniVersion: string): WireAnswer {
  const body = { cniVersion, code: error.cniCode, msg: error.message, details: error.details };
  const line = `podnet-cni: error ${error.cniCode}: ${error.message}`.slice(0, MAX_STDERR_LINE);
  return { exitStatus: 1, stdout: encoder.encode(JSON.stringify(body)), stderr: encoder.encode(`${line}\n`) };
}

function codeOf(err: unknown): string {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : '';
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * handlerError maps what a handler threw to the CniError answered: a CniError as it is (STATUS keeps only 50 and 51
 * from it), anything else from status() code 50, a retryable AgentError 11, an InvalidArgumentError 7 (4 when its
 * argument is about the netns), anything else 100. The error's message is the msg, its `code` the details.
 */
export function handlerError(command: CniCommand, err: unknown): CniError {
  if (command === 'STATUS') {
    const code = err instanceof CniError && err.cniCode === CNI_ERROR_CODES.notAvailableLimitedConnectivity ? 51 : 50;
    return err instanceof CniError && err.cniCode === code ? err : new CniError(code, messageOf(err), codeOf(err), { cause: err });
  }
  if (err instanceof CniError) return err;
  let code: number = CNI_ERROR_CODES.handlerFailed;
  if (err instanceof AgentError && err.retryable) code = CNI_ERROR_CODES.tryAgainLater;
  else if (err instanceof InvalidArgumentError) {
    code = /netns/i.test(err.argument) ? CNI_ERROR_CODES.invalidEnvironment : CNI_ERROR_CODES.invalidNetworkConfig;
  }
  return new CniError(code, messageOf(err), codeOf(err), { cause: err });
}
