export { Rtnetlink } from './client.js';
export type {
  Address,
  IpFamily,
  Link,
  RawAttribute,
  Route,
  RouteProtocol,
  RouteScope,
  RouteSpec,
  RouteType,
  RtnetlinkOpenOptions,
  RoutingRule,
  RoutingRuleAction,
  RoutingRuleSpec,
  RtnetlinkChange,
} from './types.js';
