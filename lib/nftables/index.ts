export { Nftables } from './client.js';
export { NftTransaction } from './transaction.js';
export type {
  NftChain,
  NftChainSpec,
  NftChainType,
  NftElement,
  NftElementSpec,
  NftFamily,
  NftHook,
  NftListedFamily,
  NftPolicy,
  NftRawRule,
  NftSet,
  NftSetFlag,
  NftSetKeyType,
  NftSetSpec,
  NftTable,
  NftTableRef,
  NftTableSpec,
  NftablesOpenOptions,
} from './types.js';
