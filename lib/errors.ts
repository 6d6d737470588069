/**
 * Error classes shared by every podnet layer, one file per job under errors/. Native code never builds its own
 * Error: it hands plain fields to {@link errorFromNative}, so a failure from the kernel, from a fake, or from argument
 * checks in TypeScript is always one of these classes with Node's `code` / `errno` / `syscall` shape.
 */
export * from './errors/base.js';
export * from './errors/native.js';
export * from './errors/predicates.js';
export * from './errors/caller-stack.js';
export * from './errors/kernel.js';
export * from './errors/process.js';
export * from './errors/iptables.js';
