/**
 * podnet/iptables-text: the text of iptables-restore input and iptables-save output, for code that writes or reads
 * it itself: quoting and tokenizing a rule line as iptables-restore does, parsing iptables-save output, reading the
 * failing line out of iptables-restore's stderr, and the tables and built-in chains a rule set may name. The
 * Iptables client and RuleSet on the package root use these; most users need only those.
 *
 * @module podnet/iptables-text
 */
export { quoteArg, tokenizeLine, MAX_ARG_BYTES } from './quote.js';
export { parseSave, IptablesSaveParseError, type IptablesState, type TableState, type ChainState } from './save-parser.js';
export { parseRestoreStderr, type ParsedRestoreStderr } from './stderr-parser.js';
export { TABLES, BUILTIN_CHAINS, MAX_CHAIN_NAME, type IptablesTable } from './rule-model.js';
