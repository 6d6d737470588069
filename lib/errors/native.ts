/**
 * Errors from the addon: native code never builds its own Error, it hands plain fields to errorFromNative, which
 * builds the class a layer registered for the fields' kind (or a PodnetSystemError).
 */
import { PodnetSystemError } from './base.js';

/** NativeErrorFields are the raw fields native code reports for a failure. */
export interface NativeErrorFields {
  kind: string;
  message: string;
  code: string;
  errno?: number;
  syscall?: string;
  [field: string]: unknown;
}

type NativeErrorBuilder = (fields: NativeErrorFields) => Error;
const builders = new Map<string, NativeErrorBuilder>();

/** registerNativeErrorKind lets a layer (ipset, spawn, ...) build its own class for errors of its kind. */
export function registerNativeErrorKind(kind: string, build: NativeErrorBuilder): void {
  builders.set(kind, build);
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * errorFromNative turns the fields reported by the addon into a podnet error; it never throws. The addon names the
 * operation `command`: it becomes the error's `operation`.
 */
export function errorFromNative(fields: NativeErrorFields): Error {
  const build = builders.get(fields.kind);
  if (build) return build(fields);
  return new PodnetSystemError(fields.message, fields.code, fields.errno ?? 0, {
    syscall: str(fields.syscall),
    path: str(fields.path),
    netns: str(fields.netns),
    set: str(fields.set),
    operation: str(fields.command),
  });
}
