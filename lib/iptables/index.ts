/** The iptables layer: rule sets, restore rendering, save parsing, backend detection and the client. */
export { Iptables, type IptablesOptions } from './iptables.js';
export { RuleSet, TABLES, BUILTIN_CHAINS, MAX_CHAIN_NAME, type IptablesTable, type RuleSpec } from './rule-set.js';
export type { RuleSetView } from './rule-model.js';
export { type IptablesBackend, type IptablesFamily, HINT_CHAINS, iptablesBinary, detectBackend } from './backend.js';
export { type IptablesRunner, type IptablesRunResult, type IptablesStartedRun, type NetnsRunnerOptions, NetnsRunner } from './runner.js';
export { type IptablesState, type TableState, type ChainState, parseSave, IptablesSaveParseError } from './save-parser.js';
export { parseRestoreStderr, type ParsedRestoreStderr } from './stderr-parser.js';
export { type VerifyResult, type RuleRef } from './verify.js';
export { quoteArg, tokenizeLine } from './quote.js';
