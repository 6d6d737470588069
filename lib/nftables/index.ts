export { Nftables } from './client.js';
export { NftTransaction } from './transaction.js';
export { NftPreparedTransaction } from './prepared.js';
export { nftExpr } from './match.js';
export type { NftRuleset, NftRulesetTable } from './ruleset.js';
export type { NftDrift, NftVerifyResult } from './ruleset-diff.js';
export type { NftAddrField, NftCtState, NftMatchOptions, NftPortField } from './match.js';
export type {
  NftBitwiseExpr,
  NftCmpExpr,
  NftCmpOp,
  NftCounterExpr,
  NftCtExpr,
  NftCtKey,
  NftData,
  NftExpr,
  NftImmediateExpr,
  NftLookupExpr,
  NftMasqueradeExpr,
  NftMetaExpr,
  NftMetaKey,
  NftNatExpr,
  NftPayloadBase,
  NftPayloadExpr,
  NftRawExpr,
  NftRedirectExpr,
  NftRegister,
  NftVerdictExpr,
} from './expr-types.js';
export type {
  NftChain,
  NftChainSpec,
  NftChainType,
  NftElement,
  NftElementData,
  NftElementSpec,
  NftFamily,
  NftHook,
  NftListedFamily,
  NftListing,
  NftMapData,
  NftPolicy,
  NftRawAttr,
  NftRawMessage,
  NftRawRule,
  NftRule,
  NftRuleRef,
  NftRuleSpec,
  NftRunOptions,
  NftSet,
  NftSetFlag,
  NftSetKeyType,
  NftSetSpec,
  NftTable,
  NftTableRef,
  NftTableSpec,
  NftablesOpenOptions,
} from './types.js';
