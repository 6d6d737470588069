/**
 * The iptables layer on the package root: the client, rule sets, the runner it drives and their types. The text
 * helpers (quoting, tokenizing, save and stderr parsing) are on the podnet/iptables-text subpath (text.ts).
 */
export { Iptables, type IptablesOptions } from './iptables.js';
export { RuleSet, type IptablesTable, type RuleSpec } from './rule-set.js';
export type { RuleSetView } from './rule-model.js';
export type { IptablesBackend, IptablesFamily } from './backend.js';
export { type IptablesRunner, type IptablesRunResult, type IptablesStartedRun, type NetnsRunnerOptions, NetnsRunner } from './runner.js';
export { type IptablesState, type TableState, type ChainState, IptablesSaveParseError } from './save-parser.js';
export { type VerifyResult, type RuleRef } from './verify.js';
